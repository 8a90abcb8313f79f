// run.ts: kiln.run and kiln.cancel. A run is snippet/run (the selection or
// the file) or intent/approve (a proposal); either streams run/output into
// the Kiln output channel in arrival order, shows repair attempts one by
// one, sends rich output (run/display, artifacts) to the webview, and ends
// with the exit status and duration, and hands the run's workspace
// changes to changes.ts. One run at a time.
import * as vscode from 'vscode';
import { Changes } from './changes';
import { DisplayPanel } from './display';
import { languageOf } from './document';
import { visible } from './hunks';
import { Reviews } from './review';
import { errorOf, MissingBinaryError, Server } from './server';
import { Session } from './session';
import { autoRepair, explain, repairAttempts } from './settings';

interface Current {
  kind: 'snippet' | 'proposal';
  cts: vscode.CancellationTokenSource;
  uri?: string;
  attempts: number;
  artifacts: any[];
  runIds: Set<string>;
  /** Its place in the server's queue while it waits for a sandbox slot. */
  queued?: number;
}

export interface RunEnd {
  error?: { message: string; code?: number; data?: any };
  result?: any;
  cancelled?: boolean;
  /** How it ended, in words ("exit 0, 12 ms"), and whether it failed. */
  summary?: string;
  failed?: boolean;
}

export class Runner {
  current: Current | undefined;
  /** Where a run's workspace changes go (set by activate()). */
  changes: Changes | undefined;
  /** The session Python runs go into with kiln.session (set by activate()). */
  session: Session | undefined;
  last: RunEnd | undefined;
  /** The text written to the output channel since the last clear. */
  text = '';
  private openStream: string | undefined;
  private readonly ended = new vscode.EventEmitter<RunEnd>();
  /** Fires when a run ends (tests and the status bar wait on it). */
  readonly onDidEnd = this.ended.event;

  constructor(private readonly server: Server, private readonly out: vscode.OutputChannel,
    private readonly display: DisplayPanel, private readonly reviews: Reviews,
    private readonly notify: (msg: string, level?: 'info' | 'warn' | 'error') => void,
    private readonly busy: (what: string | undefined) => void) {
    server.on('run/output', (p) => this.output(p));
    server.on('run/status', (p) => this.runStatus(p));
    server.on('run/artifact', (p) => this.artifact(p));
    server.on('run/display', (p) => this.richDisplay(p));
    server.on('intent/attempt', (p) => this.attempt(p));
    server.on('intent/explanation', (p) => {
      if (this.current && typeof p?.text === 'string') {
        this.append('explain', p.text);
      }
    });
    server.onDeath((why) => {
      if (this.current) {
        this.note(`[${why}]`);
        this.finish({ error: { message: why } });
      }
    });
  }

  // panel: false for what the section's result line says instead.
  private write(s: string, panel = true): void {
    this.text += s;
    this.out.append(s);
    if (panel && this.current) {
      this.display.output(s);
    }
  }

  private clear(header: string): void {
    this.out.clear();
    this.text = '';
    this.openStream = undefined;
    this.write(header + '\n', false);
    this.out.show(true);
  }

  /** A line of kiln's own: attempt headers, the summary. */
  note(line: string, panel = true): void {
    if (this.openStream) {
      this.write('\n');
      this.openStream = undefined;
    }
    this.write(line + '\n', panel);
  }

  // A chunk that ends without a newline leaves its line open for the same
  // stream only, so stdout and stderr never splice into one line.
  private append(stream: string, text: string): void {
    if (!text) {
      return;
    }
    if (this.openStream && this.openStream !== stream) {
      this.write('\n');
    }
    this.write(visible(text));
    this.openStream = text.endsWith('\n') ? undefined : stream;
  }

  private mine(p: any): boolean {
    return this.current !== undefined && p && typeof p === 'object';
  }

  private output(p: any): void {
    if (!this.mine(p)) {
      return;
    }
    if (typeof p.runId === 'string') {
      this.current!.runIds.add(p.runId);
    }
    this.append(p.stream === 'stderr' ? 'stderr' : 'stdout', String(p.text ?? ''));
  }

  // run/status {runId, state, position, running, maxConcurrentRuns}: every
  // sandbox slot is taken (sandbox.maxConcurrentRuns), so the run waits in
  // the server's queue before its box is built. Said in the status bar and
  // the output, else a queued run looks hung. One run at a time here: a
  // status is the current run's unless it names another run.
  private runStatus(p: any): void {
    if (!this.mine(p)) {
      return;
    }
    const cur = this.current!;
    if (typeof p.runId === 'string') {
      if (cur.runIds.size > 0 && !cur.runIds.has(p.runId)) {
        return;
      }
      cur.runIds.add(p.runId);
    }
    if (p.state === 'queued') {
      const position: number = Number.isInteger(p.position) && p.position > 0 ? p.position : 1;
      cur.queued = position;
      this.note(`[queued: ${ordinal(position)} in line for a sandbox slot; ${p.running ?? '?'} of ${p.maxConcurrentRuns ?? '?'} busy]`);
      this.busy(`queued (${ordinal(position)})`);
    } else if (p.state === 'running' && cur.queued !== undefined) {
      cur.queued = undefined;
      this.note('[running: a slot is free]');
      this.busy('running');
    }
  }

  private artifact(p: any): void {
    if (!this.mine(p)) {
      return;
    }
    const cur = this.current!;
    cur.artifacts.push(p);
    const where = p.path ?? (p.omitted ? `not copied: ${p.omitted}` : 'inline');
    this.note(`artifact ${cur.artifacts.length}: ${visible(String(p.name))} (${p.mimeType}, ${p.size} bytes) ${where}`);
    const mime = String(p.mimeType ?? '');
    if (p.encoding === 'base64' && typeof p.data === 'string') {
      if (mime.startsWith('image/') && mime !== 'image/svg+xml') {
        this.display.add({ runId: p.runId, title: p.name, data: { [mime]: p.data, 'text/plain': p.name } });
      } else if (mime.startsWith('text/') || mime === 'image/svg+xml' || mime === 'application/json') {
        const text = Buffer.from(p.data, 'base64').toString('utf8');
        const type = mime === 'text/html' || mime === 'image/svg+xml' ? mime : 'text/plain';
        this.display.add({ runId: p.runId, title: p.name, data: { [type]: text, 'text/plain': text } });
      }
    }
  }

  // run/display {runId, data, metadata?} (issue 12): a Jupyter-style MIME
  // bundle, always with text/plain.
  private richDisplay(p: any): void {
    if (!p || typeof p !== 'object' || !p.data || typeof p.data !== 'object') {
      return;
    }
    // A value with only text is output text (in the channel and its
    // section); anything richer is drawn in the panel.
    const textOnly = Object.keys(p.data).every((k) => k === 'text/plain');
    if (!textOnly || !this.current) {
      this.display.add({ runId: p.runId, data: p.data, metadata: p.metadata, title: 'display' });
    }
    if (this.current && typeof p.data['text/plain'] === 'string' && textOnly) {
      this.append('stdout', p.data['text/plain'].endsWith('\n') ? p.data['text/plain'] : p.data['text/plain'] + '\n');
    } else if (this.current) {
      const kinds = Object.keys(p.data).join(', ');
      this.note(`[display: ${kinds}: in the Kiln Output panel]`, false);
    }
  }

  private attempt(p: any): void {
    if (!p || typeof p !== 'object') {
      return;
    }
    // Stages: running, ran {ok, failure}, repairing, repaired {verdict,
    // code}, repair_failed {error}.
    let extra = '';
    if (typeof p.verdict === 'string') {
      extra = ` (verdict ${p.verdict})`;
    } else if (p.ok === false && typeof p.failure === 'string') {
      extra = `: ${p.failure}`;
    } else if (typeof p.error === 'string') {
      extra = `: ${p.error}`;
    }
    this.note(`-- attempt ${p.attempt ?? '?'} ${String(p.stage ?? '').replace(/_/g, ' ')}${visible(extra)} --`);
    if (typeof p.code === 'string') {
      // The repaired code, so what runs next is seen before it runs.
      for (const l of p.code.replace(/\n$/, '').split('\n')) {
        this.note(`  | ${visible(l)}`);
      }
    }
    if (this.current) {
      this.current.attempts++;
      this.busy(`attempt ${p.attempt} ${p.stage}`);
    }
    // The review follows the repaired proposal (Reviews owns the review).
    if (p.stage === 'repaired' && p.proposal && typeof p.proposal === 'object' && this.current?.uri) {
      this.reviews.followRepair(this.current.uri, p.proposal);
    }
  }

  private summary(r: any): string {
    const parts: string[] = [];
    if (r.timedOut) {
      parts.push('timed out');
    }
    if (r.signal) {
      parts.push(`killed by signal ${r.signal}`);
    }
    if (r.exitCode !== undefined && r.exitCode !== null) {
      parts.push(`exit ${r.exitCode}`);
    }
    if (typeof r.durationMs === 'number') {
      parts.push(`${Math.round(r.durationMs)} ms`);
    }
    if (r.truncated) {
      parts.push('output truncated');
    }
    return parts.join(', ');
  }

  private finish(end: RunEnd): void {
    if (this.current) {
      const run = end.result?.attempts ? (end.result.result ?? {}) : (end.result ?? {});
      end.failed = end.error !== undefined || (run.exitCode !== 0 && run.exitCode !== undefined);
      end.summary = end.cancelled ? 'cancelled' : end.error ? visible(end.error.message) : this.summary(run);
      this.display.end(end.summary, end.failed);
    }
    this.current = undefined;
    this.last = end;
    this.busy(undefined);
    this.ended.fire(end);
  }

  private async start(kind: Current['kind'], method: string, params: any, header: string, uri?: string,
    title?: string): Promise<RunEnd> {
    if (this.current) {
      this.notify('a run is in progress (Kiln: Cancel stops it)', 'warn');
      return { error: { message: 'a run is in progress' } };
    }
    const cur: Current = { kind, cts: new vscode.CancellationTokenSource(), uri, attempts: 0, artifacts: [], runIds: new Set() };
    this.current = cur;
    this.clear(header);
    this.display.begin(title ?? header);
    this.busy('running');
    let end: RunEnd;
    try {
      const result = await this.server.request(method, params, cur.cts.token);
      end = { result };
    } catch (e: any) {
      if (e instanceof MissingBinaryError && this.current === cur) {
        this.note(`[${e.message}]`);
        this.finish({ error: { message: e.message } });
        throw e;
      }
      end = { error: errorOf(e) };
    }
    if (this.current !== cur) {
      // Cancelled (or the server died): the run ended already.
      return this.last ?? end;
    }
    if (end.error) {
      this.note(`[${visible(end.error.message)}]`, false);
      this.failed(end.error);
    } else {
      this.report(end.result, cur);
    }
    this.finish(end);
    return end;
  }

  private failed(err: { message: string; code?: number; data?: any }): void {
    const kind = err.data?.kind;
    if (kind === 'denied') {
      // snippet/run's refusal is explained by a modal (override.ts); a
      // denied message can mention the sandbox ("the sandbox has no
      // network"), so this comes first.
      if (this.current?.kind !== 'snippet') {
        this.notify('the validator denied this proposal: it cannot be run (see its diagnostics)', 'error');
      }
    } else if (kind === 'sandbox' || /sandbox/i.test(err.message)) {
      // The sandbox's own message names the step and the fix.
      this.notify(`kiln cannot run code here: ${err.message}`, 'error');
    } else if (kind === 'conflict') {
      this.notify(`the document changed since the proposal: nothing ran (${err.message})`, 'warn');
    } else {
      this.notify(`run: ${err.message}`, 'error');
    }
  }

  private report(result: any, cur: Current): void {
    result = result ?? {};
    // intent/approve answers { ok, result (the last run), attempts, ... }.
    const run = result.attempts ? (result.result ?? {}) : result;
    this.note(`[${this.summary(run)}]`, false);
    if (result.stopped) {
      this.note(`[stopped: ${result.stopped}]`);
    }
    if (result.proposal && typeof result.proposal === 'object' && cur.uri) {
      // A repair is a new proposal: it ran only if automatic repair let it.
      this.note(`[the repaired code ${result.proposal.proposalId} did not run: it needs your approval ` +
        `(verdict ${result.proposal.verdict}): review it, then Kiln: Run runs it]`);
      // Already followed at its `repaired` attempt, unless that was missed.
      this.reviews.followRepair(cur.uri, result.proposal);
    }
    // Files the run wrote in the workspace (issues 12, 34): listed, and
    // offered; kiln writes them only when the person says Apply.
    this.changes?.report(run);
    if (typeof run.sessionId === 'string') {
      this.session?.ran(run);
    }
  }

  /** Run the document (or the selection). kept, when given, says what a
   * review kept of a proposal, and goes in the header; opts.code is the
   * code to run instead of the document's (what a review kept), and
   * opts.override asks to run code the validator denies (review.ts's
   * Run Anyway, after the person confirmed it). */
  async runDocument(doc: vscode.TextDocument, selection?: vscode.Range, kept?: string,
    opts?: { code?: string; override?: boolean }): Promise<RunEnd> {
    const code = opts?.code ?? (selection ? doc.getText(selection) : doc.getText());
    const name = doc.uri.path.split('/').pop() || 'untitled';
    const where = selection ? `:${selection.start.line + 1}-${selection.end.line + 1}` : kept ? ` as you kept it (${kept})` : '';
    const params: any = { language: languageOf(doc), code };
    if (opts?.override) {
      params.override = true;
    }
    if (this.session?.wants(params.language)) {
      const id = await this.session.ensure();
      if (id) {
        params.sessionId = id;
        await this.session.idle();
      }
    }
    const header = `kiln run: ${name}${where}${params.sessionId ? ` in session ${params.sessionId}` : ''}${opts?.override ? ' (denied code, run anyway on your word)' : ''}`;
    return this.start('snippet', 'snippet/run', params, header, doc.uri.toString(), `${name}${where}: ${firstLine(code)}`);
  }

  async approve(doc: vscode.TextDocument, proposalId: string, version: number): Promise<RunEnd> {
    const params: any = {
      proposalId,
      explain: explain(),
      textDocument: { uri: doc.uri.toString(), version },
    };
    const n = repairAttempts();
    if (n > 0) {
      params.repair = { maxAttempts: n };
      if (autoRepair()) {
        params.repair.auto = true;
      }
    }
    const name = doc.uri.path.split('/').pop() || 'untitled';
    const code = this.reviews.runnable(doc)?.proposal?.code ?? '';
    return this.start('proposal', 'intent/approve', params, `kiln run: proposal ${proposalId}`, doc.uri.toString(),
      `${name}, proposal ${proposalId}: ${firstLine(code)}`);
  }

  /** kiln.cancel: the server kills the run when it reads $/cancelRequest;
   * the run ends here at once, whatever it answers. */
  cancel(): boolean {
    const cur = this.current;
    if (!cur) {
      return false;
    }
    cur.cts.cancel();
    this.note('[cancelled]', false);
    this.finish({ cancelled: true, error: { message: 'cancelled' } });
    return true;
  }
}

/** A run's name in the Kiln Output panel: its code's first line that is
 * not blank or a comment, cut at 80 characters. */
export function firstLine(code: string): string {
  const line = code.split('\n').map((l) => l.trim()).find((l) => l && !l.startsWith('#') && !l.startsWith('//')) ?? '';
  return visible(line.length > 80 ? `${line.slice(0, 79)}…` : line);
}

/** 1 -> "1st", 2 -> "2nd", 11 -> "11th", 23 -> "23rd". */
export function ordinal(n: number): string {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${suffix}`;
}
