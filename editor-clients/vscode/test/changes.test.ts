import './stub/register';
// A run's workspace changes against the real server, in a real folder:
// the run writes a binary file (a PNG, NUL bytes and all) and changes a
// CSV in its private layer; they are listed with size and kind, the image
// is shown, and the person's Apply has kiln write them, byte for byte as
// the run wrote them. A file changed on the host since the run, or open
// with unsaved changes, is not overwritten, and the person is told which
// and why.
import * as assert from 'node:assert/strict';
import * as crypto from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { afterEach, test } from 'node:test';
import { activate, haveKiln, kilnBin, message, Session, tmpFolder } from './helpers';
import * as vscode from './stub/vscode';

let s: Session | undefined;
afterEach(async () => { await s?.dispose(); s = undefined; });
const needKiln = haveKiln() ? {} : { skip: `no kiln server at ${kilnBin} (make build/kiln)` };

const CSV = 'month,total\n2026-01,12\n2026-02,17\n';

// A 32x32 PNG made by hand (zlib, no matplotlib: quick and exact), a row
// added to sales.csv, and the SHA-256 of what the run wrote, printed.
const MAKE = [
  'import hashlib, struct, zlib',
  'def chunk(t, d):',
  '    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))',
  'raw = b"".join(b"\\0" + bytes(v for x in range(32) for v in (x * 8, y * 8, 0)) for y in range(32))',
  'png = (b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 32, 32, 8, 2, 0, 0, 0))',
  '       + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))',
  'open("monthly.png", "wb").write(png)',
  'with open("sales.csv", "a") as f:',
  '    f.write("2026-03,31\\n")',
  'print("png", hashlib.sha256(png).hexdigest())',
  'print("csv", hashlib.sha256(open("sales.csv", "rb").read()).hexdigest())',
  '',
].join('\n');

const sha = (b: Buffer): string => crypto.createHash('sha256').update(b).digest('hex');
const printed = (text: string, what: string): string => new RegExp(`^${what} ([0-9a-f]{64})$`, 'm').exec(text)?.[1] ?? 'none';

async function run(ws: string, code = MAKE): Promise<any> {
  vscode.openEditor(path.join(ws, 'make.py'), 'python', code);
  const end = await vscode.commands.executeCommand('kiln.run');
  assert.equal(end.result?.exitCode, 0, s!.kiln.runner.text);
  return end.result;
}

test('workspace changes: Apply has kiln write the binary and the text file, byte for byte as the run wrote them', needKiln, async () => {
  const ws = tmpFolder({ 'sales.csv': CSV });
  s = await activate({}, ws);
  vscode.answers.message.push('Apply');
  const result = await run(ws);
  const res = await s.kiln.changes.offered;
  const out = s.kiln.runner.text;
  const png = path.join(ws, 'monthly.png');
  const csv = path.join(ws, 'sales.csv');
  // Listed with size and kind; the binary one with its type, not in the edit.
  const pngChange = result.workspaceChanges.find((c: any) => c.path === png);
  assert.equal(pngChange.binary, true, JSON.stringify(result.workspaceChanges));
  assert.equal(pngChange.inEdit, false);
  assert.match(out, new RegExp(`^workspace: created monthly\\.png \\(${pngChange.size} bytes, binary image/png\\)$`, 'm'));
  assert.match(out, /^workspace: modified sales\.csv \(\d+ bytes\)$/m);
  const offer = vscode.recorded.messages.find((m) => /the run changed 2 files/.test(m.text))!;
  assert.ok(offer, JSON.stringify(vscode.recorded.messages));
  assert.match(offer.text, /monthly\.png \(\d+ bytes, binary image\/png\)/);
  assert.deepEqual(offer.items, ['Review', 'Apply', 'Discard']);
  // The image, from kiln's kept copy, in the Kiln Output panel.
  const shown = vscode.recorded.webviews[0]?.posted.filter((m: any) => m.type === 'display').map((m: any) => m.item) ?? [];
  const image = shown.find((i: any) => /^workspace: created monthly\.png/.test(i.title));
  assert.ok(image, JSON.stringify(shown.map((i: any) => i.title)));
  assert.equal(sha(Buffer.from(image.data['image/png'], 'base64')), printed(out, 'png'));
  // Applied through kiln: the files on disk are what the run wrote.
  assert.deepEqual([...res!.applied].sort(), [csv, png].sort());
  assert.deepEqual(res!.skipped, []);
  assert.equal(sha(fs.readFileSync(png)), printed(out, 'png'));
  assert.equal(sha(fs.readFileSync(csv)), printed(out, 'csv'));
  assert.equal(fs.readFileSync(csv, 'utf8'), `${CSV}2026-03,31\n`);
  assert.match(out, /^workspace: applied monthly\.png$/m);
  assert.ok(message(/^info: kiln: applied 2 changes to your files$/), JSON.stringify(vscode.recorded.messages));
  assert.equal(vscode.recorded.messages.filter((m) => m.level !== 'info').length, 0, JSON.stringify(vscode.recorded.messages));
});

test('workspace changes: a file changed on the host since the run, or unsaved in an editor, is not overwritten, and the person is told', needKiln, async () => {
  const ws = tmpFolder({ 'sales.csv': CSV, 'notes.txt': 'old\n' });
  s = await activate({}, ws);
  const notes = vscode.openEditor(path.join(ws, 'notes.txt'), 'plaintext', 'old\n');
  vscode.type(notes.document, new vscode.Range(0, 0, 0, 0), 'unsaved ');
  assert.equal(notes.document.isDirty, true);
  // The offer goes unanswered (dismissed): nothing is written.
  const result = await run(ws, `${MAKE}open("notes.txt", "w").write("from the run\\n")\n`);
  assert.equal(await s.kiln.changes.offered, undefined);
  assert.equal(result.workspaceChanges.length, 3, JSON.stringify(result.workspaceChanges));
  assert.ok(!fs.existsSync(path.join(ws, 'monthly.png')), 'nothing written unasked');
  assert.equal(fs.readFileSync(path.join(ws, 'sales.csv'), 'utf8'), CSV);
  // The host's sales.csv changes before the person applies.
  const host = `${CSV}2026-03,30 (typed on the host)\n`;
  fs.writeFileSync(path.join(ws, 'sales.csv'), host);
  const res = await vscode.commands.executeCommand('kiln.applyChanges');
  assert.deepEqual(res.applied, [path.join(ws, 'monthly.png')]);
  const why = new Map(res.skipped.map((x: any) => [x.path, x.reason]));
  assert.match(String(why.get(path.join(ws, 'sales.csv'))), /changed on the host after the run/);
  assert.equal(why.get(path.join(ws, 'notes.txt')), 'it has unsaved changes in the editor');
  assert.equal(fs.readFileSync(path.join(ws, 'sales.csv'), 'utf8'), host, 'the host\'s change stays');
  assert.equal(fs.readFileSync(path.join(ws, 'notes.txt'), 'utf8'), 'old\n');
  assert.equal(sha(fs.readFileSync(path.join(ws, 'monthly.png'))), printed(s.kiln.runner.text, 'png'));
  // Said as a warning with kiln's reason, never as success.
  assert.ok(message(/^warn: kiln: applied 1 of 3 changes; not applied: sales\.csv: it was changed on the host after the run; notes\.txt: it has unsaved changes in the editor$/),
    JSON.stringify(vscode.recorded.messages));
  assert.ok(!message(/^info: kiln: applied/), 'no success message');
  assert.match(s.kiln.runner.text, /^workspace: NOT applied sales\.csv: it was changed on the host after the run$/m);
});

test('workspace changes: Review lists each change with size and kind; only the picked ones are applied', needKiln, async () => {
  const ws = tmpFolder({ 'sales.csv': CSV });
  s = await activate({}, ws);
  vscode.answers.message.push('Review');
  vscode.answers.pick.push((items) => items.filter((i: any) => i.label === 'monthly.png'));
  await run(ws);
  const res = await s.kiln.changes.offered;
  const pick = vscode.recorded.picks[0];
  assert.equal(pick.options.canPickMany, true);
  assert.deepEqual(pick.items.map((i: any) => [i.label, i.picked]).sort(), [['monthly.png', true], ['sales.csv', true]]);
  assert.match(pick.items.find((i: any) => i.label === 'monthly.png').description, /^created, \d+ bytes, binary image\/png$/);
  assert.match(pick.items.find((i: any) => i.label === 'sales.csv').description, /^modified, \d+ bytes$/);
  assert.deepEqual(res!.applied, [path.join(ws, 'monthly.png')]);
  assert.equal(fs.readFileSync(path.join(ws, 'sales.csv'), 'utf8'), CSV, 'not picked, not written');
  // Kiln: Apply Workspace Changes applies the rest later; kiln skips what it applied already.
  const again = await vscode.commands.executeCommand('kiln.applyChanges');
  assert.deepEqual(again.applied, [path.join(ws, 'sales.csv')]);
  assert.deepEqual(again.skipped.map((x: any) => x.path), [path.join(ws, 'monthly.png')]);
  assert.equal(sha(fs.readFileSync(path.join(ws, 'sales.csv'))), printed(s.kiln.runner.text, 'csv'));
});

// Discard declines the changes in kiln (workspace/declineChanges). The
// extension's own runs are one-shot (it opens no session): kiln applies
// them no more, nothing is written, and Kiln: Apply Workspace Changes
// does not offer them again.
test('workspace changes: Discard declines them in kiln: nothing is written, and they cannot be applied afterwards', needKiln, async () => {
  const ws = tmpFolder({ 'sales.csv': CSV });
  s = await activate({}, ws);
  vscode.answers.message.push('Discard');
  const result = await run(ws);
  assert.equal(await s.kiln.changes.offered, undefined);
  const png = path.join(ws, 'monthly.png');
  const csv = path.join(ws, 'sales.csv');
  const res = s.kiln.changes.lastDecline!;
  assert.equal(res.notSent, undefined, JSON.stringify(res));
  assert.deepEqual([...res.declined].sort(), [csv, png].sort());
  assert.deepEqual(res.kept, []);
  const out = s.kiln.runner.text;
  assert.match(out, /^workspace: declined monthly\.png$/m);
  assert.match(out, /^workspace: declined sales\.csv$/m);
  assert.ok(message(/^info: kiln: discarded 2 changes: kiln will not apply (monthly\.png, sales\.csv|sales\.csv, monthly\.png)$/),
    JSON.stringify(vscode.recorded.messages));
  // Not offered again by Kiln: Apply Workspace Changes.
  assert.equal(await vscode.commands.executeCommand('kiln.applyChanges'), undefined);
  assert.ok(message(/^warn: kiln: no run has workspace changes to apply$/), JSON.stringify(vscode.recorded.messages));
  // And kiln itself refuses them: each is skipped as declined.
  const again = await s.kiln.server.request('workspace/applyChanges', { runId: result.runId });
  assert.deepEqual(again.applied, []);
  assert.deepEqual(again.skipped.map((x: any) => x.reason), ['it was declined (workspace/declineChanges)', 'it was declined (workspace/declineChanges)']);
  assert.ok(!fs.existsSync(png), 'nothing written');
  assert.equal(fs.readFileSync(csv, 'utf8'), CSV);
});

// A run of a live session (opened here through the extension's server,
// since the extension's commands run one-shot): Discard drops the change
// from the session's layer, so its next run sees the folder's file; a
// change a later run of the session changed again is still held, and the
// person is told so, with kiln's reason, as a warning.
test('workspace changes: Discard of a session run drops its changes from the session; one it still holds is a warning with kiln\'s reason', needKiln, async () => {
  const ws = tmpFolder({ 'sales.csv': CSV });
  s = await activate({}, ws);
  await s.kiln.server.ensure();
  const { sessionId } = await s.kiln.server.request('session/open', { language: 'python' });
  const stdout = new Map<string, string>();
  s.kiln.server.on('run/output', (p: any) => {
    if (p?.stream === 'stdout') {
      stdout.set(p.runId, (stdout.get(p.runId) ?? '') + String(p.text));
    }
  });
  const srun = async (code: string): Promise<any> => {
    const r = await s!.kiln.server.request('snippet/run', { sessionId, code });
    assert.equal(r.exitCode, 0, JSON.stringify(r));
    return r;
  };
  const first = await srun('open("notes.txt", "w").write("from the run\\n")\nopen("sales.csv", "a").write("2026-03,31\\n")\n');
  assert.deepEqual(first.workspaceChanges.map((c: any) => c.path).sort(), [path.join(ws, 'notes.txt'), path.join(ws, 'sales.csv')]);
  // A later run changes sales.csv again: declining the first run's change cannot drop it.
  await srun('open("sales.csv", "a").write("2026-04,40\\n")\n');
  vscode.answers.message.push('Discard');
  s.kiln.changes.report(first);
  assert.equal(await s.kiln.changes.offered, undefined);
  const res = s.kiln.changes.lastDecline!;
  assert.deepEqual(res.declined, [path.join(ws, 'notes.txt')], JSON.stringify(res));
  assert.deepEqual(res.kept.map((k) => k.path), [path.join(ws, 'sales.csv')]);
  assert.match(res.kept[0].reason, /changed it again/);
  const out = s.kiln.runner.text;
  assert.match(out, /^workspace: declined notes\.txt \(dropped from the session: its next run sees your folder's file\)$/m);
  assert.match(out, /^workspace: NOT declined sales\.csv: .*changed it again.* \(the session still shows it\)$/m);
  assert.ok(message(/^warn: kiln: discarded 1 of 2 changes: the session dropped notes\.txt; it still shows: sales\.csv: .*changed it again/),
    JSON.stringify(vscode.recorded.messages));
  assert.ok(!message(/^info: kiln: discarded/), 'no success message');
  // The session's next run sees the folder: no notes.txt; sales.csv still the session's.
  const next = await srun('import os\nprint(os.path.exists("notes.txt"))\nprint(open("sales.csv").read().splitlines()[-1])\n');
  assert.equal(stdout.get(next.runId), 'False\n2026-04,40\n');
  assert.equal(fs.existsSync(path.join(ws, 'notes.txt')), false, 'nothing written to the folder');
  assert.equal(fs.readFileSync(path.join(ws, 'sales.csv'), 'utf8'), CSV);
});
