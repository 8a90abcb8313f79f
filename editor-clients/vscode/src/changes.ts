// changes.ts: a run's workspace changes (issues 12 and 34). What a run
// created, modified or deleted in the workspace stayed in its private
// layer. Each change is listed in the Kiln output with its size and kind
// (a binary one with its MIME type, and why kiln kept no copy when it did
// not), an image is shown in the Kiln Output panel from the copy kiln
// kept, and the person's Apply has kiln write the changes itself
// (workspace/applyChanges), text and binary alike: kiln checks each file
// against what the host held when the run started, so a file changed
// since is skipped with kiln's reason, which is said as a warning, never
// as success. Nothing is written unasked.
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

/** A run's changes, as the result listed them. */
export interface RunChanges {
  runId: string;
  workspace?: string;
  changes: Change[];
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
    const rc: RunChanges = { runId: run.runId, workspace: typeof run.workspace === 'string' ? run.workspace : undefined, changes: list };
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
    return undefined;
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
