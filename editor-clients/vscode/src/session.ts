// session.ts: the Python session of this window (session/open), used when
// kiln.session is on: Python runs and intents go into one live namespace,
// as a notebook's kernel keeps one (the terminal's `kiln shell` and
// Neovim's `session = true` do the same). Opened on first use, forgotten
// when the server goes away; Kiln: Reset Session starts it afresh, Kiln:
// Close Session ends it. The Kiln Variables view lists what it holds, by
// running a short listing in the session itself (the server has no
// listing method): names, types, shapes and short values.
import * as vscode from 'vscode';
import { visible } from './hunks';
import { errorOf, Server } from './server';
import { sessionEnabled } from './settings';

/** One name the session holds, as the listing reports it. */
export interface Variable {
  name: string;
  type: string;
  /** A shape, a length or a short value. */
  summary: string;
}

// The listing run in the session: one line of JSON after a marker, names
// the person made only (no _names, modules, or the display() every run
// has), at most LIST_MAX of them, each value cut. It leaves no name behind
// and ends with a statement, so the session displays nothing.
const MARK = 'KILN-VARIABLES:';
const LIST_MAX = 200;
export const LISTING = `# kiln: the variables view's listing
def _kiln_vars():
    import json, types
    out = []
    for k, v in list(globals().items()):
        if k.startswith('_') or k == 'display' or isinstance(v, types.ModuleType):
            continue
        t = type(v)
        shape = getattr(v, 'shape', None)
        if isinstance(shape, tuple):
            s = 'shape ' + ' x '.join(str(n) for n in shape)
        elif isinstance(v, (list, tuple, dict, set, frozenset, str, bytes)) and len(v) > 40:
            s = 'len ' + str(len(v))
        else:
            try:
                s = repr(v)
            except Exception as e:
                s = '<repr failed: ' + type(e).__name__ + '>'
        out.append({'name': k, 'type': t.__module__ + '.' + t.__qualname__ if t.__module__ != 'builtins' else t.__qualname__, 'summary': s[:80]})
        if len(out) >= ${LIST_MAX}:
            break
    print('${MARK}' + json.dumps(out), flush=True)
_kiln_vars()
del _kiln_vars
`;

export class Session implements vscode.TreeDataProvider<Variable> {
  /** The server's session id ("s1"), or undefined. */
  id: string | undefined;
  private opening: Promise<string | undefined> | undefined;
  variables: Variable[] = [];
  /** The listing in flight: a run waits for it (the session runs one
   * thing at a time and would answer sessionBusy). */
  private listing: Promise<unknown> | undefined;
  private readonly changed = new vscode.EventEmitter<Variable | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly server: Server,
    private readonly notify: (msg: string, level?: 'info' | 'warn' | 'error') => void) {
    server.onDeath(() => this.forget());
  }

  private forget(): void {
    this.id = undefined;
    this.variables = [];
    this.changed.fire(undefined);
    void vscode.commands.executeCommand('setContext', 'kiln.sessionOpen', false);
  }

  /** Whether a run of this language goes into the session. */
  wants(language: string): boolean {
    return sessionEnabled() && language === 'python';
  }

  /** The session's id, opening it if needed; undefined (and a message)
   * when the server cannot open one, so the run goes without it. */
  async ensure(): Promise<string | undefined> {
    if (this.id) {
      return this.id;
    }
    if (!this.opening) {
      this.opening = this.open().finally(() => { this.opening = undefined; });
    }
    return this.opening;
  }

  private async open(): Promise<string | undefined> {
    try {
      const r = await this.server.request('session/open', { language: 'python' });
      if (typeof r?.sessionId !== 'string') {
        throw new Error(`no sessionId in ${JSON.stringify(r).slice(0, 200)}`);
      }
      this.id = r.sessionId;
      void vscode.commands.executeCommand('setContext', 'kiln.sessionOpen', true);
      return this.id;
    } catch (e) {
      this.notify(`cannot open a session: ${errorOf(e).message}; this run goes without one`, 'error');
      return undefined;
    }
  }

  /** Kiln: Reset Session: forget everything it holds (session/reset);
   * also brings back a session that has ended. */
  async reset(): Promise<boolean> {
    if (!this.id) {
      this.notify('no session is open (kiln.session opens one with the first Python run)');
      return false;
    }
    try {
      await this.server.request('session/reset', { sessionId: this.id });
    } catch (e) {
      this.notify(`session reset: ${errorOf(e).message}`, 'error');
      return false;
    }
    this.variables = [];
    this.changed.fire(undefined);
    this.notify('the session starts afresh');
    return true;
  }

  /** Kiln: Close Session: end its box; the next Python run opens a new one. */
  async close(): Promise<boolean> {
    const id = this.id;
    if (!id) {
      this.notify('no session is open');
      return false;
    }
    this.forget();
    try {
      await this.server.request('session/close', { sessionId: id });
    } catch (e) {
      this.notify(`session close: ${errorOf(e).message}`, 'warn');
      return false;
    }
    this.notify('the session is closed');
    return true;
  }

  /** A run in the session ended: its box may have gone with it. */
  ran(result: any): void {
    if (result?.sessionEnded) {
      this.notify(`the session ended: ${visible(String(result.sessionEndReason ?? 'its program exited'))}; ` +
        'Kiln: Reset Session starts it afresh', 'warn');
    }
  }

  /** Resolves when no listing holds the session. */
  async idle(): Promise<void> {
    while (this.listing) {
      await this.listing.catch(() => undefined);
    }
  }

  /** Refresh the variables view: the listing runs in the session (a run
   * started meanwhile waits for it, idle()). */
  async refresh(): Promise<Variable[] | undefined> {
    await this.idle();
    const p = this.list();
    this.listing = p;
    try {
      return await p;
    } finally {
      if (this.listing === p) {
        this.listing = undefined;
      }
    }
  }

  private async list(): Promise<Variable[] | undefined> {
    if (!this.id) {
      this.variables = [];
      this.changed.fire(undefined);
      return this.variables;
    }
    const lines: { runId?: string; text: string }[] = [];
    const grab = (p: any) => {
      if (p && p.stream !== 'stderr' && typeof p.text === 'string' && lines.length < 64) {
        lines.push({ runId: p.runId, text: p.text });
      }
    };
    this.server.on('run/output', grab);
    let result: any;
    try {
      result = await this.server.request('snippet/run', { sessionId: this.id, language: 'python', code: LISTING });
    } catch (e) {
      this.notify(`cannot list the session's variables: ${errorOf(e).message}`, 'warn');
      return undefined;
    } finally {
      this.server.off('run/output', grab);
    }
    const text = lines.filter((l) => !l.runId || l.runId === result?.runId).map((l) => l.text).join('');
    const at = text.lastIndexOf(MARK);
    try {
      const list = at >= 0 ? JSON.parse(text.slice(at + MARK.length).split('\n')[0]) : undefined;
      if (!Array.isArray(list)) {
        throw new Error('no listing in the output');
      }
      this.variables = list.map((v: any) => ({
        name: visible(String(v.name)), type: visible(String(v.type)), summary: visible(String(v.summary)),
      }));
    } catch (e) {
      this.notify(`cannot list the session's variables: ${(e as Error).message}`, 'warn');
      return undefined;
    }
    this.changed.fire(undefined);
    return this.variables;
  }

  getTreeItem(v: Variable): vscode.TreeItem {
    const item = new vscode.TreeItem(v.name, vscode.TreeItemCollapsibleState.None);
    item.description = `${v.type}: ${v.summary}`;
    item.tooltip = `${v.name}: ${v.type}\n${v.summary}`;
    return item;
  }

  getChildren(v?: Variable): Variable[] {
    return v ? [] : this.variables;
  }

  dispose(): void {
    const id = this.id;
    this.forget();
    if (id && this.server.running()) {
      void this.server.request('session/close', { sessionId: id }).catch(() => undefined);
    }
  }
}
