// conversation.ts: Kiln: Show Conversation, a webview of what was asked
// and what came of it, turn by turn: the intent, the model's explanation
// (its prose around the code), the code with its verdict and diagnostics,
// each repair, the run's output, displays and workspace changes, and its
// ledger (attempts, duration, CPU, peak memory, tokens). It watches the
// server's requests and notifications (Server.observe), so the intent,
// review and run code know nothing of it. Text from the model or a
// program is stored with control characters made visible and reaches the
// page only through textContent (webview.ts); the page's policy allows
// its own script by nonce and data: images, nothing else.
import * as vscode from 'vscode';
import { DisplayItem, labelOf } from './display';
import { visible } from './hunks';
import { RequestOutcome, Server } from './server';
import { LISTING } from './session';
import { openPanel, page } from './webview';

export interface Repair {
  attempt: number;
  stage: string;
  verdict?: string;
  code?: string;
  error?: string;
}

export interface Turn {
  id: number;
  /** "intent" (asked the model) or "run" (a document run directly). */
  kind: 'intent' | 'run';
  intent?: string;
  file?: string;
  explanation?: string;
  proposalId?: string;
  code?: string;
  verdict?: string;
  diagnostics: string[];
  error?: string;
  repairs: Repair[];
  output: string;
  displays: DisplayItem[];
  changes: string[];
  /** "2 attempts · 41 ms · CPU 30 ms · peak memory 12.1 MiB · 214 + 26 tokens" */
  ledger?: string;
  running?: boolean;
}

// Turns kept, output text and displays per turn.
export const MAX_TURNS = 50;
const MAX_OUTPUT = 16 * 1024;
const MAX_DISPLAYS = 10;

function v(s: unknown, max = 4000): string {
  const t = visible(String(s ?? ''));
  return t.length > max ? `${t.slice(0, max)}… [cut at ${max} characters]` : t;
}

export class Conversation {
  readonly turns: Turn[] = [];
  private seq = 0;
  /** The turn whose run is in flight: notifications go there. */
  private active: Turn | undefined;
  private explaining = false;
  private panel: vscode.WebviewPanel | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Every message posted to the webview (tests read it). */
  readonly posted: unknown[] = [];

  constructor(server: Server) {
    server.observe((method, params, outcome) => this.request(method, params, outcome));
    server.on('intent/attempt', (p) => this.attempt(p));
    server.on('intent/explanation', (p) => {
      // Streamed in pieces: the first starts a paragraph of its own.
      const t = this.active;
      if (t && typeof p?.text === 'string' && (t.explanation ?? '').length < MAX_OUTPUT) {
        if (!this.explaining) {
          this.explaining = true;
          t.explanation = t.explanation ? `${t.explanation}\n\n` : '';
        }
        t.explanation += v(p.text);
        this.changed();
      }
    });
    server.on('run/output', (p) => {
      const t = this.active;
      if (t && typeof p?.text === 'string' && t.output.length < MAX_OUTPUT) {
        t.output += v(p.text, MAX_OUTPUT - t.output.length);
        this.changed();
      }
    });
    server.on('run/display', (p) => {
      const t = this.active;
      if (t && p?.data && typeof p.data === 'object' && t.displays.length < MAX_DISPLAYS) {
        t.displays.push({ data: p.data, title: labelOf(p.data, t.displays) });
        this.changed();
      }
    });
  }

  private turn(kind: Turn['kind']): Turn {
    const t: Turn = { id: ++this.seq, kind, diagnostics: [], repairs: [], output: '', displays: [], changes: [] };
    this.turns.push(t);
    if (this.turns.length > MAX_TURNS) {
      this.turns.shift();
    }
    return t;
  }

  private request(method: string, params: any, outcome?: RequestOutcome): void {
    if (method === 'intent/run') {
      this.intent(params, outcome);
    } else if (method === 'intent/approve' || method === 'snippet/run') {
      if (method === 'snippet/run' && params?.code === LISTING) {
        return;
      }
      this.run(method, params, outcome);
    }
  }

  // intent/run: a turn per request, filled in by its answer.
  private pendingIntents = new Map<any, Turn>();
  private intent(params: any, outcome?: RequestOutcome): void {
    if (!outcome) {
      const t = this.turn('intent');
      t.intent = v(params?.intent);
      t.file = params?.textDocument?.uri ? v(String(params.textDocument.uri).split('/').pop()) : undefined;
      t.running = true;
      this.pendingIntents.set(params, t);
      this.changed();
      return;
    }
    const t = this.pendingIntents.get(params);
    this.pendingIntents.delete(params);
    if (!t) {
      return;
    }
    t.running = false;
    const r = outcome.result;
    if (outcome.error) {
      t.error = v(outcome.error.message);
    } else if (r && typeof r === 'object') {
      t.proposalId = typeof r.proposalId === 'string' ? r.proposalId : undefined;
      t.explanation = r.explanation ? v(r.explanation) : undefined;
      t.code = v(r.code ?? '', 20000);
      t.verdict = v(r.verdict ?? '?');
      for (const d of Array.isArray(r.diagnostics) ? r.diagnostics.slice(0, 20) : []) {
        const line = (d?.range?.start?.line ?? 0) + 1;
        t.diagnostics.push(v(`line ${line}: ${d?.message ?? ''}${d?.code ? ` (${d.code})` : ''}`, 400));
      }
      if (r.usage && typeof r.usage === 'object') {
        t.ledger = tokens(r.usage);
      }
    }
    this.changed();
  }

  // intent/approve (the proposal's turn) or snippet/run (a turn of its own).
  private run(method: string, params: any, outcome?: RequestOutcome): void {
    if (!outcome) {
      let t = method === 'intent/approve'
        ? [...this.turns].reverse().find((x) => x.proposalId === params?.proposalId) : undefined;
      if (!t) {
        t = this.turn('run');
        t.file = params?.textDocument?.uri ? v(String(params.textDocument.uri).split('/').pop()) : undefined;
        t.code = v(params?.code ?? '', 20000);
        if (method === 'intent/approve') {
          t.intent = `proposal ${v(params?.proposalId)}`;
        }
      }
      t.running = true;
      this.active = t;
      this.explaining = false;
      this.changed();
      return;
    }
    const t = this.active;
    this.active = undefined;
    if (!t) {
      return;
    }
    t.running = false;
    if (outcome.error) {
      t.error = v(outcome.error.message);
    } else {
      const r = outcome.result ?? {};
      const run = r.attempts ? (r.result ?? {}) : r;
      for (const c of Array.isArray(run.workspaceChanges) ? run.workspaceChanges.slice(0, 50) : []) {
        t.changes.push(v(`${c.kind} ${String(c.path).split('/').pop()}${typeof c.size === 'number' ? ` (${c.size} bytes)` : ''}`, 300));
      }
      const parts = [ledger(r, run), t.ledger].filter(Boolean);
      t.ledger = parts.join(' · ');
    }
    this.changed();
  }

  private attempt(p: any): void {
    const t = this.active;
    if (!t || !p || typeof p !== 'object' || !/repair/.test(String(p.stage))) {
      return;
    }
    t.repairs.push({
      attempt: Number(p.attempt) || 0, stage: v(String(p.stage).replace(/_/g, ' ')),
      verdict: p.verdict ? v(p.verdict) : undefined, code: p.code ? v(p.code, 20000) : undefined,
      error: p.error ? v(p.error) : undefined,
    });
    this.changed();
  }

  /** Kiln: Show Conversation. */
  show(): void {
    if (this.panel) {
      this.panel.reveal(vscode.ViewColumn.Beside, true);
      return;
    }
    this.panel = openPanel('kiln.conversation', 'Kiln Conversation', conversationHtml,
      () => this.post(), () => { this.panel = undefined; });
  }

  // Streams change a turn often: the page gets the whole list at most
  // every 100 ms.
  private changed(): void {
    if (!this.panel || this.timer) {
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.post();
    }, 100);
  }

  private post(): void {
    if (!this.panel) {
      return;
    }
    const msg = { type: 'turns', turns: this.turns };
    this.posted.push(msg);
    void this.panel.webview.postMessage(msg);
  }

  dispose(): void {
    if (this.timer) {
      clearTimeout(this.timer);
    }
    this.panel?.dispose();
  }
}

function tokens(u: any): string | undefined {
  return typeof u.promptTokens === 'number' ? `${u.promptTokens} + ${u.completionTokens ?? 0} tokens` : undefined;
}

function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** A run's ledger in words, from snippet/run's result (or intent/approve's). */
export function ledger(r: any, run: any): string {
  const parts: string[] = [];
  if (Array.isArray(r.attempts)) {
    parts.push(`${r.attempts.length} attempt${r.attempts.length === 1 ? '' : 's'}`);
  }
  if (run.exitCode !== undefined) {
    parts.push(run.exitCode === null ? `signal ${run.signal}` : `exit ${run.exitCode}`);
  }
  if (typeof run.durationMs === 'number') {
    parts.push(`${Math.round(run.durationMs)} ms`);
  }
  if (typeof run.cpuMs === 'number') {
    parts.push(`CPU ${Math.round(run.cpuMs)} ms`);
  }
  const peak = run.cgroup?.memoryPeakBytes;
  if (typeof peak === 'number') {
    parts.push(`peak memory ${mib(peak)}`);
  } else if (typeof run.maxRssKb === 'number') {
    parts.push(`peak memory ${mib(run.maxRssKb * 1024)}`);
  }
  return parts.join(' · ');
}

/** The page. Exported for tests, which check its policy. */
export function conversationHtml(nonce: string, cspSource: string): string {
  return page(nonce, cspSource, 'Kiln Conversation', `
.turn { border-top: 1px solid var(--vscode-panel-border, rgba(128,128,128,.35)); padding: .5em 0 1em 0; }
.you { font-weight: 600; }
.prose { margin: .4em 0; white-space: pre-wrap; }
.verdict { font-size: .9em; }
.verdict.deny, .error { color: var(--vscode-errorForeground); }
.verdict.warn { color: var(--vscode-editorWarning-foreground); }
pre.code { background: var(--vscode-textCodeBlock-background); padding: .4em; }
.ledger, .changes, .muted { opacity: .75; font-size: .9em; }
`, `
const main = document.getElementById('main');
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = visible(text);
  return e;
}
function render(turns) {
  main.textContent = '';
  if (!turns.length) main.appendChild(el('p', 'muted', 'Nothing yet: Kiln: Ask or Kiln: Run, and each turn shows here.'));
  for (const t of turns) {
    const a = el('article', 'turn');
    a.dataset.id = String(t.id);
    a.appendChild(el('div', 'you', (t.kind === 'intent' ? 'You asked: ' : 'You ran: ') + (t.intent || t.file || '') + (t.file && t.intent ? ' (' + t.file + ')' : '')));
    if (t.explanation) a.appendChild(el('div', 'prose', t.explanation));
    if (t.code) a.appendChild(el('pre', 'code', t.code));
    if (t.verdict) a.appendChild(el('div', 'verdict ' + t.verdict, 'verdict ' + t.verdict + (t.diagnostics.length ? ': ' + t.diagnostics.join('; ') : '')));
    for (const r of t.repairs) {
      a.appendChild(el('div', 'repair', 'attempt ' + r.attempt + ' ' + r.stage + (r.verdict ? ' (verdict ' + r.verdict + ')' : '') + (r.error ? ': ' + r.error : '')));
      if (r.code) a.appendChild(el('pre', 'code', r.code));
    }
    if (t.output) a.appendChild(el('pre', 'output', t.output));
    for (const d of t.displays) a.appendChild(renderItem(d));
    if (t.changes.length) a.appendChild(el('div', 'changes', 'workspace changes: ' + t.changes.join(', ')));
    if (t.error) a.appendChild(el('div', 'error', t.error));
    if (t.ledger) a.appendChild(el('div', 'ledger', t.ledger));
    if (t.running) a.appendChild(el('div', 'muted', '…'));
    main.appendChild(a);
  }
  main.lastElementChild && main.lastElementChild.scrollIntoView({ block: 'end' });
}
window.addEventListener('message', e => { if (e.data.type === 'turns') render(e.data.turns); });
`);
}
