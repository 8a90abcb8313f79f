// review.ts: a proposal under review in the editor itself, inline, as
// Continue's vertical diff and Copilot's inline chat show one: each hunk's
// proposed lines are written into the document below the lines they would
// replace, the proposed lines decorated green as whole lines, the old ones
// kept and struck through in red, and a CodeLens above each hunk names the
// verdict and its rules and offers Accept / Reject (and for all). Accept
// deletes the red lines, Reject deletes the green ones, so a rejected hunk
// leaves exactly what was there. The validator's diagnostics sit on the
// proposed lines they are about. The document never keeps proposed lines
// nobody reviewed: starting another intent, a manual save, closing the
// document or VS Code, and an edit that crosses a hunk's edge end the
// review with the pending hunks rejected (their green lines removed).
// This is the only review surface: no diff or preview tab stays open.
import * as vscode from 'vscode';
import { applyEdits, Block, editsFor, Hunk, hunks, insertLines, lineChange, linesSpan, LspTextEdit, splitLines, track, visible } from './hunks';

export const PROPOSAL_SCHEME = 'kiln-proposal';

export interface Proposal {
  proposalId: string;
  language?: string;
  code?: string;
  edit?: unknown;
  hunks?: { range: any; newText: string; oldText?: string }[];
  diagnostics?: any[];
  verdict?: string;
  explanation?: string;
}

export interface Review {
  uri: string;
  proposal: Proposal;
  hunks: Hunk[];
  /** Where each hunk sits in the document now (see Block). */
  blocks: Block[];
  /** The document's version as the review last left it. */
  version: number;
  /** The validator's diagnostics of the proposed code: the line of the
   * proposed text each is on (LSP diagnostic, row0 added). */
  diags: { line: number; endLine: number; d: vscode.Diagnostic }[];
  writing: boolean;
  /** Set once the review ended: later writes and renders do nothing. */
  ended?: boolean;
}

/** Virtual documents: the preview the model's code streams into. */
export class ProposalDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;

  set(uri: vscode.Uri, text: string): void {
    this.texts.set(uri.toString(), text);
    this.emitter.fire(uri);
  }

  get(uri: vscode.Uri): string | undefined {
    return this.texts.get(uri.toString());
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }
}

/** Close every tab that shows a kiln-proposal document (the streamed
 * preview): the review happens in the document itself, and nothing of a
 * proposal stays open once it is reviewed. */
export async function closeProposalTabs(): Promise<void> {
  const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => {
    const i: unknown = t.input;
    const uris = i instanceof vscode.TabInputText ? [i.uri]
      : i instanceof vscode.TabInputTextDiff ? [i.original, i.modified] : [];
    return uris.some((u) => u.scheme === PROPOSAL_SCHEME);
  });
  if (tabs.length > 0) {
    await vscode.window.tabGroups.close(tabs, true);
  }
}

const SEVERITY: Record<number, vscode.DiagnosticSeverity> = {
  1: vscode.DiagnosticSeverity.Error,
  2: vscode.DiagnosticSeverity.Warning,
  3: vscode.DiagnosticSeverity.Information,
  4: vscode.DiagnosticSeverity.Hint,
};

/** An LSP Diagnostic to VS Code's, moved down by row0 lines. */
export function toDiagnostic(d: any, row0 = 0): vscode.Diagnostic {
  const r = d?.range ?? { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } };
  const range = new vscode.Range(row0 + r.start.line, r.start.character, row0 + r.end.line, r.end.character);
  let message = visible(String(d?.message ?? ''));
  if (d?.data?.explanation) {
    message += `\n${visible(String(d.data.explanation))}`;
  }
  const out = new vscode.Diagnostic(range, message, SEVERITY[d?.severity] ?? vscode.DiagnosticSeverity.Error);
  out.source = d?.source ?? 'kiln';
  if (d?.code !== undefined) {
    out.code = String(d.code);
  }
  return out;
}

/** The rule codes of some diagnostics, each once, in order. */
function rules(ds: vscode.Diagnostic[]): string[] {
  const out: string[] = [];
  for (const d of ds) {
    const c = d.code === undefined ? '' : visible(String(d.code));
    if (c && !out.includes(c)) {
      out.push(c);
    }
  }
  return out;
}

interface Record_ {
  proposal: Proposal; version: number; tick: number; snapshot: string; hunks: Hunk[];
  /** The person edited the document during the review: it no longer
   * holds the proposal as the server has it, whatever the decisions. */
  foreign?: boolean;
}

export class Reviews implements vscode.CodeLensProvider {
  readonly reviews = new Map<string, Review>();
  /** Each document's last proposal, what kiln.run approves: the request's
   * version (sent to intent/approve), the version the review left, and
   * the review's hunks, whose decisions say whether the document holds
   * the proposal (see runnable). */
  readonly proposals = new Map<string, Record_>();
  readonly diagnostics: vscode.DiagnosticCollection;
  private readonly removed: vscode.TextEditorDecorationType;
  private readonly added: vscode.TextEditorDecorationType;
  private readonly lensEmitter = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensEmitter.event;

  constructor(private readonly docs: ProposalDocuments, private readonly notify: (msg: string, level?: 'info' | 'warn' | 'error') => void) {
    this.diagnostics = vscode.languages.createDiagnosticCollection('kiln-proposal');
    // The old lines a hunk would replace: kept, red, struck through.
    this.removed = vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      backgroundColor: new vscode.ThemeColor('diffEditor.removedLineBackground'),
      textDecoration: 'line-through',
      overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.deletedForeground'),
      overviewRulerLane: vscode.OverviewRulerLane.Left,
    });
    // The proposed lines, written into the document: green whole lines.
    this.added = vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      backgroundColor: new vscode.ThemeColor('diffEditor.insertedLineBackground'),
      overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.addedForeground'),
      overviewRulerLane: vscode.OverviewRulerLane.Left,
    });
  }

  dispose(): void {
    this.diagnostics.dispose();
    this.removed.dispose();
    this.added.dispose();
  }

  private document(uri: string): vscode.TextDocument | undefined {
    return vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
  }

  private eolOf(doc: vscode.TextDocument): string {
    return doc.eol === vscode.EndOfLine.CRLF ? '\r\n' : '\n';
  }

  /** Review proposal on doc, made for `snapshot` at `version`. The hunks
   * go from `base` (default: the snapshot) to the proposed text; the
   * document must hold `base` at version `tick` (default: `version`): a
   * repaired proposal is reviewed from the document as the first review
   * left it (see followRepair). The proposed lines are written into the
   * document (one edit) before this resolves. */
  async start(doc: vscode.TextDocument, proposal: Proposal, snapshot: string, version: number,
    base: string = snapshot, tick: number = version): Promise<Review | undefined> {
    const uri = doc.uri.toString();
    const old = this.reviews.get(uri);
    if (old) {
      await this.abandon(old, 'a new proposal replaces it');
    }
    let edits = editsFor(proposal.edit, uri);
    if (!edits && Array.isArray(proposal.hunks)) {
      edits = proposal.hunks.map((h) => ({ range: h.range, newText: h.newText }));
    }
    if (!edits) {
      this.notify('the proposal carries no edit', 'error');
      return undefined;
    }
    const proposed = applyEdits(snapshot, edits);
    const hs = hunks(base, proposed);
    const rv: Review = { uri, proposal, hunks: hs, blocks: hs.map((h) => ({ row: h.oldStart, red: h.oldCount, green: 0 })),
      version: tick, diags: [], writing: false };
    this.placeDiagnostics(rv, edits);
    this.proposals.set(uri, { proposal, version, tick, snapshot, hunks: hs });
    if (hs.length === 0) {
      this.notify('the proposal changes nothing');
      return rv;
    }
    if (doc.version !== tick) {
      // Its rows are of a text the document no longer holds.
      this.notify(`the document changed while the model wrote: proposal ${proposal.proposalId} cannot be ` +
        'shown in it (Kiln: Ask again makes a new one)', 'warn');
      this.proposals.delete(uri);
      return undefined;
    }
    // The proposed lines go into the document, each hunk's below its old lines.
    const text = doc.getText();
    const lines = splitLines(text);
    const finalEol = text === '' || /(\r\n|\r|\n)$/.test(text);
    const we = new vscode.WorkspaceEdit();
    hs.forEach((h, i) => {
      if (h.lines.length > 0) {
        const [l, c, t] = insertLines(lines, finalEol, rv.blocks[i].row + rv.blocks[i].red, h.lines, this.eolOf(doc));
        we.insert(doc.uri, new vscode.Position(l, c), t);
      }
    });
    this.reviews.set(uri, rv);
    if (!(await this.apply(rv, doc, we))) {
      this.reviews.delete(uri);
      this.proposals.delete(uri);
      return undefined;
    }
    let shift = 0;
    hs.forEach((h, i) => {
      rv.blocks[i].row += shift;
      rv.blocks[i].green = h.lines.length;
      shift += h.lines.length;
    });
    // A selection made to ask (Ctrl+A, say) would otherwise stay over the
    // proposed lines through the review and decide what Kiln: Run runs.
    for (const e of vscode.window.visibleTextEditors) {
      if (e.document.uri.toString() === uri) {
        const at = new vscode.Position(Math.min(rv.blocks[0].row, Math.max(doc.lineCount - 1, 0)), 0);
        e.selection = new vscode.Selection(at, at);
      }
    }
    this.render(rv);
    const count = `${hs.length} hunk${hs.length === 1 ? '' : 's'}`;
    if (proposal.verdict === 'deny') {
      const named = rv.diags.filter((x) => x.d.severity === vscode.DiagnosticSeverity.Error)
        .map((x) => `${x.d.code ?? 'kiln'}: ${x.d.message.split('\n')[0]}`);
      this.notify(`proposal ${proposal.proposalId} is DENIED by the validator (${count}): ${named.join('; ') || 'see its diagnostics'}. ` +
        'It is shown in the document for review; it cannot run, and accepting it asks first.', 'error');
    } else {
      this.notify(`proposal ${proposal.proposalId}: ${count}, verdict ${proposal.verdict}`);
    }
    return rv;
  }

  /** A repaired proposal (intent/approve's repair: its `repaired` attempt,
   * or its answer's `proposal`) for uri: the review follows it, so that
   * what is shown, and what Accept writes, is the code that runs next. It
   * was made for the same text as the first proposal, so its edit applies
   * to the same snapshot; the new review goes from the document as the
   * person holds it (the first review's pending lines taken out, its
   * accepted hunks kept) to that text. */
  async followRepair(uri: string, proposal: Proposal): Promise<Review | undefined> {
    const p = this.proposals.get(uri);
    if (!p || !proposal || typeof proposal !== 'object' || p.proposal.proposalId === proposal.proposalId) {
      return undefined;
    }
    const old = p.proposal.proposalId;
    // What kiln.run approves from now on.
    p.proposal = proposal;
    const doc = this.document(uri);
    if (!doc || doc.version !== p.tick) {
      this.notify(`proposal ${old} was repaired as ${proposal.proposalId}, but the document changed since: ` +
        'the repaired code is not shown (run Kiln: Ask again)', 'warn');
      return undefined;
    }
    const rv = this.reviews.get(uri);
    if (rv) {
      await this.abandon(rv);
    }
    this.notify(`proposal ${old} was repaired: the review now shows ${proposal.proposalId}, the code that runs`);
    return this.start(doc, proposal, p.snapshot, p.version, doc.getText(), doc.version);
  }

  // The validator's positions are in the code, which starts where the
  // (first) edit starts.
  private placeDiagnostics(rv: Review, edits: LspTextEdit[]): void {
    let row0 = Number.MAX_SAFE_INTEGER;
    for (const e of edits) {
      row0 = Math.min(row0, e.range.start.line);
    }
    if (row0 === Number.MAX_SAFE_INTEGER) {
      row0 = 0;
    }
    for (const d of rv.proposal.diagnostics ?? []) {
      const line = row0 + (d?.range?.start?.line ?? 0);
      const endLine = row0 + (d?.range?.end?.line ?? d?.range?.start?.line ?? 0);
      rv.diags.push({ line, endLine, d: toDiagnostic(d) });
    }
  }

  /** The document row of line `line` of the proposed text, as the review
   * stands; undefined when that line is not in the document (its hunk
   * was rejected). */
  private docRow(rv: Review, line: number): number | undefined {
    let before: { h: Hunk; b: Block } | undefined;
    for (let i = 0; i < rv.hunks.length; i++) {
      const h = rv.hunks[i];
      const b = rv.blocks[i];
      if (line >= h.newStart && line < h.newStart + h.lines.length) {
        if (h.status === 'rejected') {
          return undefined;
        }
        return b.row + (h.status === 'pending' ? b.red : 0) + (line - h.newStart);
      }
      if (h.newStart + h.lines.length <= line) {
        before = { h, b };
      }
    }
    if (!before) {
      return line;
    }
    return before.b.row + before.b.red + before.b.green + (line - (before.h.newStart + before.h.lines.length));
  }

  /** The hunk (index) a proposed line is in, if any. */
  private hunkOf(rv: Review, line: number): number {
    return rv.hunks.findIndex((h) => line >= h.newStart && line < h.newStart + Math.max(h.lines.length, 1));
  }

  render(rv: Review): void {
    if (rv.ended) {
      return;
    }
    const doc = this.document(rv.uri);
    const editors = vscode.window.visibleTextEditors.filter((e) => e.document.uri.toString() === rv.uri);
    const removed: vscode.DecorationOptions[] = [];
    const added: vscode.DecorationOptions[] = [];
    const n = doc ? doc.lineCount : 0;
    const clamp = (r: number) => Math.max(0, Math.min(r, Math.max(n - 1, 0)));
    rv.hunks.forEach((h, i) => {
      if (h.status !== 'pending') {
        return;
      }
      const b = rv.blocks[i];
      if (b.red > 0) {
        removed.push({ range: new vscode.Range(clamp(b.row), 0, clamp(b.row + b.red - 1), 0) });
      }
      if (b.green > 0) {
        added.push({ range: new vscode.Range(clamp(b.row + b.red), 0, clamp(b.row + b.red + b.green - 1), 0) });
      }
    });
    // Each diagnostic on the line it is about, in the document as it is.
    const diags: vscode.Diagnostic[] = [];
    for (const x of rv.diags) {
      const i = this.hunkOf(rv, x.line);
      if (i >= 0 && rv.hunks[i].status !== 'pending') {
        continue;
      }
      const row = this.docRow(rv, x.line);
      if (row === undefined || !doc) {
        continue;
      }
      const endRow = this.docRow(rv, x.endLine) ?? row;
      const r = x.d.range;
      const line = clamp(row);
      const end = Math.max(line, clamp(endRow));
      const endChar = end === line && r.end.character <= r.start.character
        ? doc.lineAt(line).range.end.character : r.end.character;
      const nd = new vscode.Diagnostic(new vscode.Range(line, r.start.character, end, endChar), x.d.message, x.d.severity);
      nd.source = x.d.source;
      nd.code = x.d.code;
      diags.push(nd);
    }
    for (const e of editors) {
      e.setDecorations(this.removed, removed);
      e.setDecorations(this.added, added);
    }
    if (doc) {
      this.diagnostics.set(doc.uri, diags);
    }
    this.lensEmitter.fire();
    void vscode.commands.executeCommand('setContext', 'kiln.reviewing', this.reviews.size > 0);
  }

  private end(rv: Review, why?: string): void {
    if (this.reviews.get(rv.uri) !== rv) {
      return;
    }
    rv.ended = true;
    this.reviews.delete(rv.uri);
    for (const e of vscode.window.visibleTextEditors) {
      if (e.document.uri.toString() === rv.uri) {
        e.setDecorations(this.removed, []);
        e.setDecorations(this.added, []);
      }
    }
    this.diagnostics.delete(vscode.Uri.parse(rv.uri));
    this.lensEmitter.fire();
    void vscode.commands.executeCommand('setContext', 'kiln.reviewing', this.reviews.size > 0);
    if (why) {
      this.notify(why);
    }
  }

  /** The review of uri (or of the active editor's document). */
  get(uri?: vscode.Uri | string): Review | undefined {
    const key = uri ? uri.toString() : vscode.window.activeTextEditor?.document.uri.toString();
    return key ? this.reviews.get(key) : undefined;
  }

  /** End rv with its pending hunks rejected: their proposed lines leave
   * the document, so none stays there unreviewed. */
  async abandon(rv: Review, why?: string): Promise<void> {
    const pending = rv.hunks.filter((h) => h.status === 'pending');
    if (pending.length > 0) {
      await this.decide(rv, pending, 'rejected');
    }
    if (this.reviews.get(rv.uri) === rv) {
      this.end(rv);
    }
    if (why && pending.length > 0) {
      this.notify(`${why}: the review of proposal ${rv.proposal.proposalId} ended, ` +
        `${pending.length} pending hunk${pending.length === 1 ? '' : 's'} rejected`);
    }
  }

  /** Every review abandoned (VS Code is closing, the extension stops). */
  async abandonAll(why?: string): Promise<void> {
    for (const rv of [...this.reviews.values()]) {
      await this.abandon(rv, why);
    }
  }

  /** The edits that remove a manual save's unreviewed lines (the save
   * writes the document as it stands, so pending hunks are rejected
   * first); for onWillSaveTextDocument's waitUntil. */
  willSave(doc: vscode.TextDocument, reason: vscode.TextDocumentSaveReason): vscode.TextEdit[] {
    const rv = this.reviews.get(doc.uri.toString());
    if (!rv || reason !== vscode.TextDocumentSaveReason.Manual) {
      return [];
    }
    const pending = rv.hunks.filter((h) => h.status === 'pending');
    const edits = this.editsFor(rv, doc, pending, 'rejected').map(([r]) => vscode.TextEdit.delete(r));
    // The save applies these: the review follows as if it had written them.
    rv.writing = true;
    const after = () => {
      rv.writing = false;
      this.settle(rv, doc, pending, 'rejected');
      this.notify(`saved without the unreviewed lines: ${pending.length} pending hunk${pending.length === 1 ? '' : 's'} ` +
        `of proposal ${rv.proposal.proposalId} rejected`);
      this.after(rv);
    };
    setTimeout(after, 0);
    return edits;
  }

  /** A change to a document under review that the review did not make:
   * the hunks move with it; an edit inside a hunk's proposed lines is
   * the person editing the proposal (Accept keeps it as edited). An edit
   * that crosses a hunk's edge ends the review: what it holds can no
   * longer be told apart. */
  changed(e: vscode.TextDocumentChangeEvent): void {
    const rv = this.reviews.get(e.document.uri.toString());
    if (!rv || rv.writing || e.contentChanges.length === 0 || e.document.version === rv.version) {
      return;
    }
    const pending = rv.hunks.map((h) => h.status === 'pending');
    const changes = [...e.contentChanges].sort((a, b) =>
      (b.range?.start.line ?? 0) - (a.range?.start.line ?? 0) || (b.range?.start.character ?? 0) - (a.range?.start.character ?? 0));
    let ok = true;
    for (const c of changes) {
      if (!c.range) {
        ok = false;
        break;
      }
      ok = track(rv.blocks, pending, lineChange(c.range.start.line, c.range.start.character, c.range.end.line, c.range.end.character, c.text)) && ok;
    }
    rv.version = e.document.version;
    const p = this.proposals.get(rv.uri);
    if (p) {
      p.foreign = true;
    }
    if (!ok) {
      this.end(rv);
      this.notify('an edit crossed the edge of a proposed hunk: the review ended, and the document holds what the edit left ' +
        '(Undo takes the edit back; Kiln: Ask again makes a new proposal)', 'warn');
      return;
    }
    // A hunk whose proposed lines were all removed (an undo of the review's
    // write, say) is rejected.
    rv.hunks.forEach((h, i) => {
      if (h.status === 'pending' && h.lines.length > 0 && rv.blocks[i].green === 0) {
        h.status = 'rejected';
      }
    });
    this.after(rv);
  }

  closed(doc: vscode.TextDocument): void {
    const uri = doc.uri.toString();
    const rv = this.reviews.get(uri);
    if (rv) {
      // The document's text is gone with it (or was saved, without the
      // pending lines: see willSave).
      this.end(rv);
    }
    this.proposals.delete(uri);
  }

  // The hunk under the cursor, else the first pending one.
  private atCursor(rv: Review): Hunk | undefined {
    const ed = vscode.window.activeTextEditor;
    const pending = rv.hunks.filter((h) => h.status === 'pending');
    if (ed && ed.document.uri.toString() === rv.uri) {
      const line = ed.selection.active.line;
      for (const h of pending) {
        const b = rv.blocks[rv.hunks.indexOf(h)];
        if (line >= b.row && line < b.row + Math.max(b.red + b.green, 1)) {
          return h;
        }
      }
    }
    return pending[0];
  }

  private pick(rv: Review, index?: number): Hunk | undefined {
    const h = index !== undefined ? rv.hunks[index] : this.atCursor(rv);
    return h && h.status === 'pending' ? h : undefined;
  }

  // The ranges that carry out a decision on hs: Accept removes the red
  // lines, Reject the green ones.
  private editsFor(rv: Review, doc: vscode.TextDocument, hs: Hunk[], status: 'accepted' | 'rejected'): [vscode.Range, Hunk][] {
    const text = doc.getText();
    const lines = splitLines(text);
    const finalEol = text === '' || /(\r\n|\r|\n)$/.test(text);
    const out: [vscode.Range, Hunk][] = [];
    for (const h of hs) {
      const b = rv.blocks[rv.hunks.indexOf(h)];
      const [s, n] = status === 'accepted' ? [b.row, b.red] : [b.row + b.red, b.green];
      if (n > 0) {
        const [sl, sc, el, ec] = linesSpan(lines, finalEol, s, s + n);
        out.push([new vscode.Range(sl, sc, el, ec), h]);
      }
    }
    return out;
  }

  // The blocks after a decision on hs was written.
  private settle(rv: Review, _doc: vscode.TextDocument, hs: Hunk[], status: 'accepted' | 'rejected'): void {
    const gone = rv.hunks.map((h) => {
      if (!hs.includes(h)) {
        return 0;
      }
      const b = rv.blocks[rv.hunks.indexOf(h)];
      return status === 'accepted' ? b.red : b.green;
    });
    let shift = 0;
    rv.hunks.forEach((h, i) => {
      const b = rv.blocks[i];
      b.row -= shift;
      if (hs.includes(h)) {
        if (status === 'accepted') {
          b.red = 0;
        } else {
          b.green = 0;
        }
        h.status = status;
      }
      shift += gone[i];
    });
    const doc = this.document(rv.uri);
    if (doc) {
      rv.version = doc.version;
      const p = this.proposals.get(rv.uri);
      if (p) {
        p.tick = doc.version;
      }
    }
  }

  // Apply we as the review's own write (one WorkspaceEdit: one undo step).
  private async apply(rv: Review, doc: vscode.TextDocument, we: vscode.WorkspaceEdit): Promise<boolean> {
    rv.writing = true;
    let ok = false;
    try {
      ok = we.size === 0 || await vscode.workspace.applyEdit(we);
    } finally {
      rv.writing = false;
    }
    if (!ok) {
      this.notify('VS Code refused the edit: nothing was written', 'error');
      return false;
    }
    rv.version = doc.version;
    const p = this.proposals.get(rv.uri);
    if (p) {
      p.tick = doc.version;
    }
    return true;
  }

  // Carry out a decision on hs; false when refused.
  private async decide(rv: Review, hs: Hunk[], status: 'accepted' | 'rejected'): Promise<boolean> {
    const doc = this.document(rv.uri);
    if (!doc) {
      this.notify('the document is closed', 'warn');
      this.end(rv);
      return false;
    }
    const we = new vscode.WorkspaceEdit();
    for (const [r] of this.editsFor(rv, doc, hs, status)) {
      we.delete(doc.uri, r);
    }
    if (!(await this.apply(rv, doc, we))) {
      return false;
    }
    this.settle(rv, doc, hs, status);
    return true;
  }

  private after(rv: Review): void {
    if (rv.ended) {
      return;
    }
    const pending = rv.hunks.filter((h) => h.status === 'pending').length;
    if (pending > 0) {
      this.render(rv);
      return;
    }
    const accepted = rv.hunks.filter((h) => h.status === 'accepted').length;
    if (accepted === 0) {
      // Rejected whole: nothing is left for kiln.run to approve.
      this.proposals.delete(rv.uri);
    }
    this.end(rv, `review done: ${accepted} of ${rv.hunks.length} hunks accepted`);
  }

  private review(uri?: vscode.Uri | string): Review | undefined {
    const rv = this.get(uri);
    if (!rv) {
      this.notify('no proposal under review here', 'warn');
    }
    return rv;
  }

  // Denied code goes into the document only when the person says so, in a
  // modal that names every rule.
  private async confirmDenied(rv: Review, hs: Hunk[]): Promise<boolean> {
    if (rv.proposal.verdict !== 'deny') {
      return true;
    }
    const named = rv.diags.map((x) => `${visible(String(x.d.code ?? 'kiln'))} (proposed line ${x.line + 1}): ${x.d.message}`);
    const which = hs.length === 1 ? `hunk ${rv.hunks.indexOf(hs[0]) + 1}` : `${hs.length} hunks`;
    const choice = await vscode.window.showWarningMessage(
      `kiln: accept ${which} of proposal ${rv.proposal.proposalId}, which the validator DENIED?`,
      { modal: true, detail: `${named.join('\n') || 'The validator denied it.'}\n\nIt becomes your code; Kiln: Run refuses it as it stands.` },
      'Accept Denied Code');
    return choice === 'Accept Denied Code';
  }

  async accept(uri?: vscode.Uri | string, index?: number): Promise<boolean> {
    const rv = this.review(uri);
    const h = rv && this.pick(rv, index);
    if (!rv || !h) {
      return false;
    }
    if (!(await this.confirmDenied(rv, [h])) || !(await this.decide(rv, [h], 'accepted'))) {
      return false;
    }
    this.after(rv);
    return true;
  }

  async reject(uri?: vscode.Uri | string, index?: number): Promise<boolean> {
    const rv = this.review(uri);
    const h = rv && this.pick(rv, index);
    if (!rv || !h) {
      return false;
    }
    if (!(await this.decide(rv, [h], 'rejected'))) {
      return false;
    }
    this.after(rv);
    return true;
  }

  async acceptAll(uri?: vscode.Uri | string): Promise<boolean> {
    const rv = this.review(uri);
    if (!rv) {
      return false;
    }
    const pending = rv.hunks.filter((h) => h.status === 'pending');
    if (!(await this.confirmDenied(rv, pending)) || !(await this.decide(rv, pending, 'accepted'))) {
      return false;
    }
    this.after(rv);
    return true;
  }

  async rejectAll(uri?: vscode.Uri | string): Promise<boolean> {
    const rv = this.review(uri);
    if (!rv) {
      return false;
    }
    if (!(await this.decide(rv, rv.hunks.filter((h) => h.status === 'pending'), 'rejected'))) {
      return false;
    }
    this.after(rv);
    return true;
  }

  /** What kiln.run approves for doc, and the version to send: the
   * request's, while the document holds exactly the proposal as the
   * review left it: every hunk still pending and untouched (the server
   * runs the proposal), or every one accepted. Otherwise intent/approve
   * would run code the document does not hold, and kiln.run runs what
   * the person kept (see kept). */
  runnable(doc: vscode.TextDocument): { proposal: Proposal; version: number } | undefined {
    const p = this.proposals.get(doc.uri.toString());
    if (!p || p.foreign || doc.version !== p.tick) {
      return undefined;
    }
    const count = (status: Hunk['status']) => p.hunks.filter((h) => h.status === status).length;
    if (count('pending') === p.hunks.length || count('accepted') === p.hunks.length) {
      return { proposal: p.proposal, version: p.version };
    }
    return undefined;
  }

  /** What the review of doc's proposal kept, when it kept part of it, and
   * the code that is: the document without the proposed lines of hunks
   * still pending. header: "proposal p1: hunk 2 accepted; 1, 3
   * rejected", for the header of the run. Undefined when no review is
   * open and the document moved on since the last one. */
  kept(doc: vscode.TextDocument): { header: string; code: string } | undefined {
    const uri = doc.uri.toString();
    const p = this.proposals.get(uri);
    const rv = this.reviews.get(uri);
    if (!p || (!rv && doc.version !== p.tick)) {
      return undefined;
    }
    const numbers = (status: Hunk['status']) => p.hunks.flatMap((h, i) => (h.status === status ? [String(i + 1)] : []));
    const accepted = numbers('accepted');
    const rejected = numbers('rejected');
    const pending = numbers('pending');
    if (accepted.length === p.hunks.length) {
      return undefined;
    }
    const parts: string[] = [];
    if (accepted.length > 0) {
      parts.push(`hunk${accepted.length > 1 ? 's' : ''} ${accepted.join(', ')} accepted`);
    }
    if (rejected.length > 0) {
      parts.push(`${rejected.join(', ')} rejected`);
    }
    if (pending.length > 0) {
      parts.push(`${pending.join(', ')} still pending, not run`);
    }
    let code = doc.getText();
    if (rv) {
      const spans = this.editsFor(rv, doc, rv.hunks.filter((h) => h.status === 'pending'), 'rejected')
        .map(([r]) => [doc.offsetAt(r.start), doc.offsetAt(r.end)] as [number, number]);
      spans.sort((a, b) => b[0] - a[0]);
      for (const [s, e] of spans) {
        code = code.slice(0, s) + code.slice(e);
      }
    }
    return { header: `proposal ${p.proposal.proposalId}: ${parts.join('; ')}`, code };
  }

  provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    const rv = this.reviews.get(doc.uri.toString());
    if (!rv) {
      return [];
    }
    const out: vscode.CodeLens[] = [];
    let firstShown = false;
    const denied = rv.proposal.verdict === 'deny';
    rv.hunks.forEach((h, i) => {
      if (h.status !== 'pending') {
        return;
      }
      const b = rv.blocks[i];
      const row = Math.max(0, Math.min(b.row, Math.max(doc.lineCount - 1, 0)));
      const range = new vscode.Range(row, 0, row, 0);
      const uri = doc.uri.toString();
      const sign = `+${h.lines.length} −${h.oldCount}`;
      // The verdict, and the rules found in this hunk's proposed lines.
      const mine = rules(rv.diags.filter((x) => this.hunkOf(rv, x.line) === i).map((x) => x.d));
      const verdict = `verdict ${rv.proposal.verdict ?? '?'}${mine.length ? `: ${mine.join(', ')}` : ''}`;
      out.push(new vscode.CodeLens(range, { title: denied ? `kiln ${i + 1}/${rv.hunks.length}: Accept Denied…` : `kiln ${i + 1}/${rv.hunks.length}: Accept`,
        command: 'kiln.acceptHunk', arguments: [uri, i] }));
      out.push(new vscode.CodeLens(range, { title: 'Reject', command: 'kiln.rejectHunk', arguments: [uri, i] }));
      if (!firstShown) {
        firstShown = true;
        out.push(new vscode.CodeLens(range, { title: denied ? 'Accept All Denied…' : 'Accept All', command: 'kiln.acceptAll', arguments: [uri] }));
        out.push(new vscode.CodeLens(range, { title: 'Reject All', command: 'kiln.rejectAll', arguments: [uri] }));
      }
      // Last, as it can be long: the verdict and the rules found in this
      // hunk's proposed lines (a click opens the Problems view).
      out.push(new vscode.CodeLens(range, { title: `${denied ? '$(error) ' : ''}(${sign}) ${verdict}`,
        command: 'workbench.actions.view.problems', arguments: [] }));
    });
    return out;
  }
}
