// review.ts: a proposal under review in the editor. Nothing is written into
// the document until a hunk is accepted: the lines a hunk replaces are
// marked red, the lines it adds show green after them (ghost text, with the
// whole block in the hover), a CodeLens above each hunk offers Accept /
// Reject (and for all, and the side-by-side diff), and the validator's
// diagnostics of the proposed lines sit on the hunk they belong to. Each
// accept is one edit, so one undo step; a document changed since the
// request (or since the review's own last write) is never written.
import * as vscode from 'vscode';
import { applyEdits, currentStart, editsFor, Hunk, hunks, LspTextEdit, splitLines, visible, withPending } from './hunks';

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
  /** The document's version as the review last left it. */
  version: number;
  /** Diagnostics of the proposed code, by hunk index. */
  diags: Map<number, vscode.Diagnostic[]>;
  writing: boolean;
}

/** Virtual documents: the streamed preview, the right side of a diff. */
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

export class Reviews implements vscode.CodeLensProvider {
  readonly reviews = new Map<string, Review>();
  /** Each document's last proposal, what kiln.run approves: the request's
   * version (sent to intent/approve), the version the review left, and
   * the review's hunks, whose decisions say whether the document holds
   * the proposal (see runnable). */
  readonly proposals = new Map<string, { proposal: Proposal; version: number; tick: number; snapshot: string; hunks: Hunk[] }>();
  readonly diagnostics: vscode.DiagnosticCollection;
  private readonly removed: vscode.TextEditorDecorationType;
  private readonly added: vscode.TextEditorDecorationType;
  private readonly lensEmitter = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensEmitter.event;

  constructor(private readonly docs: ProposalDocuments, private readonly notify: (msg: string, level?: 'info' | 'warn' | 'error') => void) {
    this.diagnostics = vscode.languages.createDiagnosticCollection('kiln-proposal');
    this.removed = vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      backgroundColor: new vscode.ThemeColor('diffEditor.removedLineBackground'),
      textDecoration: 'line-through',
    });
    this.added = vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      after: {
        color: new vscode.ThemeColor('gitDecoration.addedResourceForeground'),
        backgroundColor: new vscode.ThemeColor('diffEditor.insertedLineBackground'),
        margin: '0 0 0 2em',
      },
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

  /** Show proposal for doc, made for `snapshot` at `version`. The hunks
   * go from `base` (default: the snapshot) to the proposed text, and the
   * review writes only into the document at version `tick` (default:
   * `version`): a repaired proposal is reviewed from the document as the
   * first review left it (see followRepair). */
  start(doc: vscode.TextDocument, proposal: Proposal, snapshot: string, version: number,
    base: string = snapshot, tick: number = version): Review | undefined {
    const uri = doc.uri.toString();
    const old = this.reviews.get(uri);
    if (old) {
      this.end(old);
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
    const rv: Review = { uri, proposal, hunks: hs, version: tick, diags: new Map(), writing: false };
    this.placeDiagnostics(rv, edits);
    this.proposals.set(uri, { proposal, version, tick, snapshot, hunks: hs });
    if (hs.length === 0) {
      this.notify('the proposal changes nothing');
      return rv;
    }
    this.reviews.set(uri, rv);
    if (doc.version !== tick) {
      this.notify('the document changed while the model wrote: the proposal cannot be applied ' +
        '(Kiln: Show Proposal as Diff shows it; Kiln: Ask again makes a new one)', 'warn');
    }
    this.render(rv);
    this.notify(`proposal ${proposal.proposalId}: ${hs.length} hunk${hs.length === 1 ? '' : 's'}, ` +
      `verdict ${proposal.verdict}`);
    return rv;
  }

  /** A repaired proposal (intent/approve's repair: its `repaired` attempt,
   * or its answer's `proposal`) for uri: the review follows it, so that
   * what is shown, and what Accept writes, is the code that runs next. It
   * was made for the same text as the first proposal, so its edit applies
   * to the same snapshot; the new review goes from the document as it is
   * now (the snapshot while the first review was open, or with the first
   * proposal's accepted hunks written) to that text. */
  followRepair(uri: string, proposal: Proposal): Review | undefined {
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
    this.notify(`proposal ${old} was repaired: the review now shows ${proposal.proposalId}, the code that runs`);
    return this.start(doc, proposal, p.snapshot, p.version, doc.getText(), p.tick);
  }

  // The validator's positions are in the code, which starts where the
  // (first) edit starts; each diagnostic goes with the hunk holding its line.
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
      let idx = rv.hunks.findIndex((h) => line >= h.newStart && line < h.newStart + Math.max(h.lines.length, 1));
      if (idx < 0) {
        idx = 0;
      }
      const vd = toDiagnostic(d);
      vd.message = `proposed line ${line - (rv.hunks[idx]?.newStart ?? 0) + 1}: ${vd.message}`;
      const list = rv.diags.get(idx) ?? [];
      list.push(vd);
      rv.diags.set(idx, list);
    }
  }

  /** The rows a pending hunk occupies in the document now: [start, end]
   * (an insertion shows on the line above it, or the first line). */
  private rows(rv: Review, h: Hunk, lineCount: number): { start: number; anchor: number } {
    const start = currentStart(rv.hunks, h);
    let anchor = h.oldCount > 0 ? start + h.oldCount - 1 : start - 1;
    anchor = Math.max(0, Math.min(anchor, Math.max(lineCount - 1, 0)));
    return { start, anchor };
  }

  render(rv: Review): void {
    const doc = this.document(rv.uri);
    const editors = vscode.window.visibleTextEditors.filter((e) => e.document.uri.toString() === rv.uri);
    const removed: vscode.DecorationOptions[] = [];
    const added: vscode.DecorationOptions[] = [];
    const diags: vscode.Diagnostic[] = [];
    const n = doc ? doc.lineCount : 0;
    rv.hunks.forEach((h, i) => {
      if (h.status !== 'pending') {
        return;
      }
      const { start, anchor } = this.rows(rv, h, n);
      if (h.oldCount > 0) {
        removed.push({ range: new vscode.Range(start, 0, start + h.oldCount - 1, 0) });
      }
      const first = h.lines[0] ?? '';
      const more = h.lines.length > 1 ? `   (+${h.lines.length - 1} more line${h.lines.length > 2 ? 's' : ''})` : '';
      const text = h.lines.length === 0 ? '(delete)' : `+ ${visible(first)}${more}`;
      const hover = new vscode.MarkdownString();
      hover.appendMarkdown(`**kiln hunk ${i + 1}/${rv.hunks.length}** adds:\n`);
      hover.appendCodeblock(h.lines.join('\n'), rv.proposal.language ?? '');
      added.push({ range: new vscode.Range(anchor, 0, anchor, 0), hoverMessage: hover, renderOptions: { after: { contentText: text } } });
      for (const d of rv.diags.get(i) ?? []) {
        const nd = new vscode.Diagnostic(new vscode.Range(anchor, 0, anchor, 0), d.message, d.severity);
        nd.source = d.source;
        nd.code = d.code;
        diags.push(nd);
      }
    });
    for (const e of editors) {
      e.setDecorations(this.removed, removed);
      e.setDecorations(this.added, added);
    }
    if (doc) {
      this.diagnostics.set(doc.uri, diags);
    }
    this.updateDiff(rv);
    this.lensEmitter.fire();
    void vscode.commands.executeCommand('setContext', 'kiln.reviewing', this.reviews.size > 0);
  }

  /** The right side of the review's diff view: the document with the
   * pending hunks applied. */
  diffUri(rv: Review): vscode.Uri {
    const name = vscode.Uri.parse(rv.uri).path.split('/').pop() || 'untitled';
    return vscode.Uri.from({ scheme: PROPOSAL_SCHEME, path: `/${rv.proposal.proposalId}/${name}`, query: rv.uri });
  }

  private updateDiff(rv: Review): void {
    const doc = this.document(rv.uri);
    if (doc) {
      this.docs.set(this.diffUri(rv), withPending(doc.getText(), rv.hunks, doc.eol === vscode.EndOfLine.CRLF ? '\r\n' : '\n'));
    }
  }

  end(rv: Review, why?: string): void {
    if (this.reviews.get(rv.uri) !== rv) {
      return;
    }
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

  private conflict(rv: Review): void {
    this.notify('the document changed since the request: the proposal was not applied (run Kiln: Ask again)', 'warn');
    this.end(rv);
  }

  /** A change to a document under review that the review did not make
   * ends the review: its rows would no longer be true. */
  changed(e: vscode.TextDocumentChangeEvent): void {
    const rv = this.reviews.get(e.document.uri.toString());
    if (rv && !rv.writing && e.document.version !== rv.version && e.contentChanges.length > 0) {
      this.conflict(rv);
    }
  }

  closed(doc: vscode.TextDocument): void {
    const uri = doc.uri.toString();
    const rv = this.reviews.get(uri);
    if (rv) {
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
        const { start, anchor } = this.rows(rv, h, ed.document.lineCount);
        if (line >= Math.min(start, anchor) && line <= Math.max(anchor, start + Math.max(h.oldCount, 1) - 1)) {
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

  // The edit that writes hunk h into doc (rows as the document is now).
  private editOf(rv: Review, doc: vscode.TextDocument, h: Hunk): vscode.TextEdit {
    const eol = doc.eol === vscode.EndOfLine.CRLF ? '\r\n' : '\n';
    const text = doc.getText();
    const n = splitLines(text).length;
    const finalEol = text === '' || /(\r\n|\r|\n)$/.test(text);
    const start = currentStart(rv.hunks, h);
    const endRow = start + h.oldCount;
    if (endRow < n || finalEol) {
      return vscode.TextEdit.replace(new vscode.Range(start, 0, endRow, 0), h.lines.map((l) => l + eol).join(''));
    }
    // The hunk reaches the last line, which has no newline: keep it so.
    const docEnd = doc.lineAt(doc.lineCount - 1).range.end;
    if (h.oldCount === 0) {
      return vscode.TextEdit.insert(docEnd, eol + h.lines.join(eol));
    }
    if (h.lines.length === 0 && start > 0) {
      return vscode.TextEdit.replace(new vscode.Range(doc.lineAt(start - 1).range.end, docEnd), '');
    }
    return vscode.TextEdit.replace(new vscode.Range(new vscode.Position(start, 0), docEnd), h.lines.join(eol));
  }

  // Write hunks (one WorkspaceEdit: one undo step); false when refused.
  private async write(rv: Review, hs: Hunk[]): Promise<boolean> {
    const doc = this.document(rv.uri);
    if (!doc) {
      this.notify('the document is closed', 'warn');
      this.end(rv);
      return false;
    }
    if (doc.version !== rv.version) {
      this.conflict(rv);
      return false;
    }
    const we = new vscode.WorkspaceEdit();
    for (const h of hs) {
      const e = this.editOf(rv, doc, h);
      we.replace(doc.uri, e.range, e.newText);
    }
    rv.writing = true;
    let ok = false;
    try {
      ok = await vscode.workspace.applyEdit(we);
    } finally {
      rv.writing = false;
    }
    if (!ok) {
      this.notify('VS Code refused the edit: nothing was written', 'error');
      return false;
    }
    for (const h of hs) {
      h.status = 'accepted';
    }
    rv.version = doc.version;
    const p = this.proposals.get(rv.uri);
    if (p) {
      p.tick = doc.version;
    }
    return true;
  }

  private after(rv: Review): void {
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

  async accept(uri?: vscode.Uri | string, index?: number): Promise<boolean> {
    const rv = this.review(uri);
    const h = rv && this.pick(rv, index);
    if (!rv || !h) {
      return false;
    }
    if (!(await this.write(rv, [h]))) {
      return false;
    }
    this.after(rv);
    return true;
  }

  reject(uri?: vscode.Uri | string, index?: number): boolean {
    const rv = this.review(uri);
    const h = rv && this.pick(rv, index);
    if (!rv || !h) {
      return false;
    }
    h.status = 'rejected';
    this.after(rv);
    return true;
  }

  async acceptAll(uri?: vscode.Uri | string): Promise<boolean> {
    const rv = this.review(uri);
    if (!rv) {
      return false;
    }
    const pending = rv.hunks.filter((h) => h.status === 'pending');
    if (!(await this.write(rv, pending))) {
      return false;
    }
    this.after(rv);
    return true;
  }

  rejectAll(uri?: vscode.Uri | string): boolean {
    const rv = this.review(uri);
    if (!rv) {
      return false;
    }
    for (const h of rv.hunks) {
      if (h.status === 'pending') {
        h.status = 'rejected';
      }
    }
    this.after(rv);
    return true;
  }

  /** The side-by-side diff (Cline's view): the document, and the document
   * with the pending hunks. */
  async showDiff(uri?: vscode.Uri | string): Promise<void> {
    const rv = this.review(uri);
    if (!rv) {
      return;
    }
    this.updateDiff(rv);
    const name = vscode.Uri.parse(rv.uri).path.split('/').pop();
    await vscode.commands.executeCommand('vscode.diff', vscode.Uri.parse(rv.uri), this.diffUri(rv),
      `${name} ↔ kiln proposal ${rv.proposal.proposalId}`);
  }

  /** What kiln.run approves for doc, and the version to send: the
   * request's while the document holds only what the review wrote, the
   * document's own while a review is open on a changed document (so the
   * server reports the conflict); nothing once the document moved on.
   * The proposal runs whole only while no hunk was rejected and either
   * every hunk is pending (as proposed) or every one was accepted (the
   * document holds it): otherwise intent/approve would run code the
   * document does not hold, and kiln.run runs the document (see kept). */
  runnable(doc: vscode.TextDocument): { proposal: Proposal; version: number } | undefined {
    const p = this.proposals.get(doc.uri.toString());
    if (!p) {
      return undefined;
    }
    const count = (status: Hunk['status']) => p.hunks.filter((h) => h.status === status).length;
    if (count('rejected') > 0 || (count('accepted') > 0 && count('pending') > 0)) {
      return undefined;
    }
    if (doc.version === p.tick) {
      return { proposal: p.proposal, version: p.version };
    }
    if (this.reviews.has(doc.uri.toString())) {
      return { proposal: p.proposal, version: doc.version };
    }
    return undefined;
  }

  /** What the review of doc's proposal kept, when it kept part of it
   * (some hunks accepted, others rejected or still pending) and the
   * document is as the review left it: "proposal p1: hunk 2 accepted;
   * 1, 3 rejected", for the header of the run of the document. */
  kept(doc: vscode.TextDocument): string | undefined {
    const p = this.proposals.get(doc.uri.toString());
    if (!p || doc.version !== p.tick) {
      return undefined;
    }
    const numbers = (status: Hunk['status']) => p.hunks.flatMap((h, i) => (h.status === status ? [String(i + 1)] : []));
    const accepted = numbers('accepted');
    const rejected = numbers('rejected');
    const pending = numbers('pending');
    if (accepted.length === 0 || (rejected.length === 0 && pending.length === 0)) {
      return undefined;
    }
    const parts = [`hunk${accepted.length > 1 ? 's' : ''} ${accepted.join(', ')} accepted`];
    if (rejected.length > 0) {
      parts.push(`${rejected.join(', ')} rejected`);
    }
    if (pending.length > 0) {
      parts.push(`${pending.join(', ')} still pending, not run`);
    }
    return `proposal ${p.proposal.proposalId}: ${parts.join('; ')}`;
  }

  provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    const rv = this.reviews.get(doc.uri.toString());
    if (!rv) {
      return [];
    }
    const out: vscode.CodeLens[] = [];
    let firstShown = false;
    rv.hunks.forEach((h, i) => {
      if (h.status !== 'pending') {
        return;
      }
      const { start, anchor } = this.rows(rv, h, doc.lineCount);
      const row = Math.max(0, Math.min(h.oldCount > 0 ? start : anchor, Math.max(doc.lineCount - 1, 0)));
      const range = new vscode.Range(row, 0, row, 0);
      const uri = doc.uri.toString();
      const sign = `+${h.lines.length} −${h.oldCount}`;
      out.push(new vscode.CodeLens(range, { title: `kiln ${i + 1}/${rv.hunks.length} (${sign}): Accept`, command: 'kiln.acceptHunk', arguments: [uri, i] }));
      out.push(new vscode.CodeLens(range, { title: 'Reject', command: 'kiln.rejectHunk', arguments: [uri, i] }));
      if (!firstShown) {
        firstShown = true;
        out.push(new vscode.CodeLens(range, { title: 'Accept All', command: 'kiln.acceptAll', arguments: [uri] }));
        out.push(new vscode.CodeLens(range, { title: 'Reject All', command: 'kiln.rejectAll', arguments: [uri] }));
        out.push(new vscode.CodeLens(range, { title: 'Diff', command: 'kiln.showDiff', arguments: [uri] }));
      }
    });
    return out;
  }
}
