// changes.ts: a run's workspace changes (issues 12 and 34). What a run
// created, modified or deleted in the workspace stayed in its private
// layer. Each change is listed in the Kiln output with its size and kind
// (a binary one with its MIME type, and why kiln kept no copy when it did
// not), an image is shown in the Kiln Output panel from the copy kiln
// kept, and the person's Apply has kiln write the changes itself
// (workspace/applyChanges), text and binary alike: kiln checks each file
// against what the host held when the run started, so a file changed
// since is skipped with kiln's reason, which is said as a warning, never
// as success. Nothing is written unasked. Discard declines them
// (workspace/declineChanges): kiln applies them no more, and a live
// session's layer drops them so that its next run sees the folder's file;
// one the session still holds is said as a warning with kiln's reason.
import { promises as fsp } from 'fs';
import * as vscode from 'vscode';
import { DisplayPanel } from './display';
import { visible } from './hunks';
import { errorOf, Server } from './server';

export interface Change {
  path: string;
  kind: string;
  size?: number;
  directory?: boolean;
  inEdit?: boolean;
  binary?: boolean;
  mimeType?: string;
  stored?: string;
  notKept?: string;
}

export interface ApplyResult {
  applied: string[];
  skipped: { path: string; reason: string }[];
}

export interface DeclineResult {
  declined: string[];
  kept: { path: string; reason: string }[];
  /** kiln was not asked (it cannot decline) or refused: only forgotten here. */
  notSent?: string;
}

/** A run's changes, as the result listed them. */
export interface RunChanges {
  runId: string;
  workspace?: string;
  /** The session the run ran in, if any: declining drops its changes there. */
  sessionId?: string;
  changes: Change[];
  /** What kiln applied of them so far: Discard declines the rest. */
  applied?: Set<string>;
}

// Images the panel shows from kiln's kept copy; larger ones are only listed.
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif'];
const MAX_IMAGE_BYTES = 8 << 20;
// Names in a notification; the output lists every one.
const MAX_NAMED = 3;

type Level = 'info' | 'warn' | 'error';

export class Changes {
  /** The last run's changes: what Apply and Kiln: Apply Workspace Changes apply. */
  last: RunChanges | undefined;
  /** The offer of the last run's changes, settled when the person answered
   * it and whatever they chose was done (tests wait on it). */
  offered: Promise<ApplyResult | undefined> | undefined;
  /** What the last Discard did (tests read it). */
  lastDecline: DeclineResult | undefined;

  constructor(private readonly server: Server, private readonly note: (line: string) => void,
    private readonly display: DisplayPanel, private readonly notify: (msg: string, level?: Level) => void) {}

  /** A path as the person reads it: relative to the run's workspace. */
  name(path: string, rc: RunChanges | undefined = this.last): string {
    const ws = rc?.workspace;
    const rel = ws && path.startsWith(ws.endsWith('/') ? ws : `${ws}/`) ? path.slice(ws.replace(/\/$/, '').length + 1) : path;
    return visible(rel);
  }

  /** What a change is besides its path: "23961 bytes, binary image/png". */
  details(c: Change): string {
    const what: string[] = [];
    if (c.directory) {
      what.push('folder');
    } else if (typeof c.size === 'number' && c.kind !== 'deleted') {
      what.push(`${c.size} bytes`);
    }
    if (c.binary) {
      what.push(`binary${c.mimeType ? ` ${visible(c.mimeType)}` : ''}`);
    }
    if (c.notKept) {
      what.push(`not kept: ${visible(c.notKept)}`);
    }
    return what.join(', ');
  }

  /** "created monthly.png (23961 bytes, binary image/png)". */
  describe(c: Change, rc?: RunChanges): string {
    const d = this.details(c);
    return `${visible(c.kind)} ${this.name(c.path, rc)}${d ? ` (${d})` : ''}`;
  }

  /** A run's result: its changes listed, images shown, the offer made.
   * A run with no workspace or no change leaves the last run's alone. */
  report(run: any): void {
    const list: Change[] = Array.isArray(run?.workspaceChanges)
      ? run.workspaceChanges.filter((c: any) => c && typeof c.path === 'string') : [];
    if (list.length === 0 || typeof run.runId !== 'string') {
      return;
    }
    const rc: RunChanges = {
      runId: run.runId,
      workspace: typeof run.workspace === 'string' ? run.workspace : undefined,
      sessionId: typeof run.sessionId === 'string' ? run.sessionId : undefined,
      changes: list,
    };
    this.last = rc;
    for (const c of list) {
      this.note(`workspace: ${this.describe(c, rc)}`);
    }
    if (run.workspaceChangesOmitted) {
      this.note(`workspace: ${run.workspaceChangesOmitted} more changes not listed (kiln reports at most 1000)`);
    }
    this.offered = this.showImages(rc).then(() => this.offer(rc));
  }

  // Each image the run wrote, in the Kiln Output panel, read from the copy
  // kiln kept (the run's layer is gone).
  private async showImages(rc: RunChanges): Promise<void> {
    for (const c of rc.changes) {
      const mime = String(c.mimeType ?? '');
      if (!c.binary || !c.stored || !IMAGE_TYPES.includes(mime) || (c.size ?? 0) > MAX_IMAGE_BYTES) {
        continue;
      }
      try {
        const data = await fsp.readFile(c.stored);
        const title = `workspace: ${this.describe(c, rc)}`;
        this.display.add({ runId: rc.runId, title, data: { [mime]: data.toString('base64'), 'text/plain': title } });
      } catch (e: any) {
        this.note(`workspace: ${this.name(c.path, rc)}: kiln's copy cannot be read (${visible(String(e?.message ?? e))})`);
      }
    }
  }

  private async offer(rc: RunChanges): Promise<ApplyResult | undefined> {
    const n = rc.changes.length;
    const named = rc.changes.slice(0, MAX_NAMED).map((c) => this.describe(c, rc)).join('; ');
    const more = n > MAX_NAMED ? `; and ${n - MAX_NAMED} more (see the Kiln output)` : '';
    const choice = await vscode.window.showInformationMessage(
      `kiln: the run changed ${n} file${n === 1 ? '' : 's'} in its private copy of the workspace: ${named}${more}. Apply to your files?`,
      'Review', 'Apply', 'Discard');
    if (choice === 'Apply') {
      return this.apply(rc);
    }
    if (choice === 'Review') {
      // Which to apply: every change listed with its size and kind, all
      // picked; the person unticks what they do not want.
      const items = rc.changes.map((c) => ({
        label: this.name(c.path, rc),
        description: [visible(c.kind), this.details(c)].filter(Boolean).join(', '),
        picked: true,
        path: c.path,
      }));
      const picked = await vscode.window.showQuickPick(items, {
        canPickMany: true,
        title: `kiln: apply which changes of run ${rc.runId}?`,
        placeHolder: 'kiln checks each file first: one changed since the run is not overwritten',
      });
      if (picked && picked.length > 0) {
        return this.apply(rc, picked.map((p) => p.path));
      }
    }
    if (choice === 'Discard') {
      await this.discard(rc);
    }
    return undefined;
  }

  /** The person discarded rc's changes: kiln declines those not applied
   * yet (workspace/declineChanges), so it applies them no more and a live
   * session's layer drops them; the extension forgets them whatever kiln
   * answers, so Kiln: Apply Workspace Changes does not offer them again.
   * A change the session still holds is said, with kiln's reason, as a
   * warning. */
  async discard(rc: RunChanges | undefined = this.last): Promise<DeclineResult | undefined> {
    if (!rc) {
      return undefined;
    }
    if (this.last === rc) {
      this.last = undefined;
    }
    const paths = rc.changes.map((c) => c.path).filter((p) => !rc.applied?.has(p));
    let res: DeclineResult = { declined: [], kept: [] };
    if (paths.length === 0) {
      this.lastDecline = res;
      return res;
    }
    const n = (k: number): string => `${k} change${k === 1 ? '' : 's'}`;
    const names = (ps: string[]): string => {
      const named = ps.slice(0, MAX_NAMED).map((p) => this.name(p, rc)).join(', ');
      return ps.length > MAX_NAMED ? `${named} and ${ps.length - MAX_NAMED} more (see the Kiln output)` : named;
    };
    if (!this.server.running() || !this.server.supports('workspace/declineChanges')) {
      // An older kiln: nothing applies them unless the person asks, and
      // the extension no longer offers them.
      res = { declined: [], kept: [], notSent: 'this kiln server cannot decline workspace changes (no workspace/declineChanges)' };
      this.note(`workspace: discarded ${n(paths.length)} of run ${visible(rc.runId)} (forgotten here: ${res.notSent})`);
      this.lastDecline = res;
      return res;
    }
    try {
      const r = await this.server.request('workspace/declineChanges', { runId: rc.runId, paths });
      res = {
        declined: Array.isArray(r?.declined) ? r.declined.map(String) : [],
        kept: Array.isArray(r?.kept) ? r.kept.map((k: any) => ({ path: String(k?.path), reason: String(k?.reason) })) : [],
      };
    } catch (e) {
      const err = errorOf(e);
      const busy = err.code === -32803 ? ' (the session is busy with a run; reset the session to drop them)' : '';
      res = { declined: [], kept: paths.map((p) => ({ path: p, reason: err.message })), notSent: err.message };
      this.note(`workspace: NOT declined (${n(paths.length)} of run ${visible(rc.runId)}): ${visible(err.message)}${busy}`);
      this.notify(`the changes were forgotten here, but kiln did not decline them: ${err.message}${busy}`, 'warn');
      this.lastDecline = res;
      return res;
    }
    const where = rc.sessionId ? ' (dropped from the session: its next run sees your folder\'s file)' : '';
    for (const p of res.declined) {
      this.note(`workspace: declined ${this.name(p, rc)}${where}`);
    }
    for (const k of res.kept) {
      this.note(`workspace: NOT declined ${this.name(k.path, rc)}: ${visible(k.reason)}${rc.sessionId ? ' (the session still shows it)' : ''}`);
    }
    if (res.kept.length === 0) {
      this.notify(rc.sessionId
        ? `discarded ${n(res.declined.length)}: the session dropped ${names(res.declined)}; its next run sees your folder's files`
        : `discarded ${n(res.declined.length)}: kiln will not apply ${names(res.declined)}`);
    } else {
      const why = res.kept.slice(0, MAX_NAMED).map((k) => `${this.name(k.path, rc)}: ${visible(k.reason)}`).join('; ');
      const more = res.kept.length > MAX_NAMED ? `; and ${res.kept.length - MAX_NAMED} more (see the Kiln output)` : '';
      const dropped = res.declined.length === 0 ? (rc.sessionId ? 'the session dropped none' : 'none declined')
        : `${rc.sessionId ? 'the session dropped' : 'declined'} ${names(res.declined)}`;
      this.notify(`discarded ${res.declined.length} of ${n(paths.length)}: ${dropped}; ${rc.sessionId ? 'it still shows' : 'not declined'}: ${why}${more}`, 'warn');
    }
    this.lastDecline = res;
    return res;
  }

  /** Apply the changes of rc (the last run's by default), or only `paths`
   * of them, through kiln. A file open in an editor with unsaved changes
   * is held back: the person's unsaved text would be lost otherwise. */
  async apply(rc: RunChanges | undefined = this.last, paths?: string[]): Promise<ApplyResult | undefined> {
    if (!rc) {
      this.notify('no run has workspace changes to apply', 'warn');
      return undefined;
    }
    if (!this.server.supports('workspace/applyChanges')) {
      this.notify('this kiln server cannot apply workspace changes (no workspace/applyChanges): update kiln', 'error');
      return undefined;
    }
    const want = paths ?? rc.changes.map((c) => c.path);
    // kiln's paths are the folder's real path; an editor's may go through a link.
    const dirty = new Set<string>();
    for (const d of vscode.workspace.textDocuments) {
      if (d.uri.scheme === 'file' && d.isDirty) {
        dirty.add(d.uri.fsPath);
        dirty.add(await fsp.realpath(d.uri.fsPath).catch(() => d.uri.fsPath));
      }
    }
    const held: ApplyResult['skipped'] = [];
    const send: string[] = [];
    for (const p of want) {
      if (dirty.has(p)) {
        held.push({ path: p, reason: 'it has unsaved changes in the editor' });
      } else {
        send.push(p);
      }
    }
    let res: ApplyResult = { applied: [], skipped: [] };
    if (send.length > 0) {
      try {
        const r = await this.server.request('workspace/applyChanges', { runId: rc.runId, paths: send });
        res = {
          applied: Array.isArray(r?.applied) ? r.applied.map(String) : [],
          skipped: Array.isArray(r?.skipped) ? r.skipped.map((s: any) => ({ path: String(s?.path), reason: String(s?.reason) })) : [],
        };
      } catch (e) {
        const err = errorOf(e);
        this.note(`workspace: nothing applied: ${visible(err.message)}`);
        this.notify(`the changes were not applied: ${err.message}`, 'error');
        return { applied: [], skipped: want.map((p) => ({ path: p, reason: err.message })) };
      }
    }
    res.skipped.push(...held);
    rc.applied ??= new Set();
    for (const p of res.applied) {
      rc.applied.add(p);
    }
    // An applied file open in an editor without unsaved changes is
    // reloaded by VS Code itself, which watches the folder: kiln writes
    // each file whole (a temporary file renamed over it).
    for (const p of res.applied) {
      this.note(`workspace: applied ${this.name(p, rc)}`);
    }
    for (const s of res.skipped) {
      this.note(`workspace: NOT applied ${this.name(s.path, rc)}: ${visible(s.reason)}`);
    }
    const total = want.length;
    if (res.skipped.length === 0) {
      this.notify(`applied ${res.applied.length} change${res.applied.length === 1 ? '' : 's'} to your files`);
    } else {
      const why = res.skipped.slice(0, MAX_NAMED).map((s) => `${this.name(s.path, rc)}: ${visible(s.reason)}`).join('; ');
      const more = res.skipped.length > MAX_NAMED ? `; and ${res.skipped.length - MAX_NAMED} more (see the Kiln output)` : '';
      this.notify(`applied ${res.applied.length === 0 ? 'none' : res.applied.length} of ${total} changes; not applied: ${why}${more}`, 'warn');
    }
    return res;
  }
}
