// kiln.intent and the review of its proposal, against the real server and
// the fake model server: the code streams into the preview, which closes
// when the proposal arrives; the proposal shows inline in the document
// (proposed lines green, old lines red and struck, a CodeLens per hunk
// naming the verdict), hunks are accepted and rejected one by one
// (document text checked), rejecting restores exactly what was there, the
// review follows the person's edits and never leaves unreviewed lines
// behind, a denied proposal is shown as one and cannot run, an intent can
// be cancelled while the model writes.
import './stub/register';
import * as assert from 'node:assert/strict';
import { after, afterEach, test } from 'node:test';
import { PREVIEW_URI } from '../src/intent';
import { activate, haveKiln, inlineRows, kilnBin, longProgram, message, modelSettings, Session, stopFakeModel, tmpFile, waitFor } from './helpers';
import * as vscode from './stub/vscode';

let s: Session | undefined;
afterEach(async () => { await s?.dispose(); s = undefined; });
after(() => stopFakeModel());
const needKiln = haveKiln() ? {} : { skip: `no kiln server at ${kilnBin} (make build/kiln)` };

async function setup(model: string, extra: Record<string, unknown> = {}): Promise<Session> {
  s = await activate(await modelSettings(model, extra));
  await s.kiln.server.ensure();
  return s;
}

async function ask(text: string): Promise<any> {
  const end = await vscode.commands.executeCommand('kiln.intent', text);
  assert.equal(end?.error, undefined, `intent error: ${JSON.stringify(end?.error)}`);
  assert.ok(end.review, 'a review');
  return end.review;
}

test('intent: the code streams into the preview, then a proposal under review', needKiln, async () => {
  await setup('fake-slow');
  const ed = vscode.openEditor(tmpFile('a.py'), 'python', 'x = 1\ny = 2\n');
  vscode.answers.input.push('print a greeting');
  const seen = { preview: false, writing: false };
  const p = vscode.commands.executeCommand('kiln.intent');
  let done = false;
  void p.then(() => { done = true; });
  await waitFor(() => {
    if (!done && (vscode.contentOf(PREVIEW_URI) ?? '').includes('print')) {
      seen.preview = true;
    }
    if (!done && /writing/.test(s!.kiln.status.item.text)) {
      seen.writing = true;
    }
    return done;
  }, 30000, 'the proposal');
  const end = await p;
  assert.ok(seen.preview, 'the code showed in the preview before the proposal');
  assert.ok(seen.writing, 'the status bar said writing');
  assert.ok(vscode.recorded.progress.some((x) => /writing/.test(x.message ?? '')), 'the notification showed progress');
  assert.ok(vscode.recorded.shown.some((x) => x.uri === PREVIEW_URI.toString()), 'the preview was opened');
  assert.deepEqual(vscode.openTabs().filter((u) => u.startsWith('kiln-proposal:')), [], 'the preview closed with the proposal');
  const rv = end.review;
  assert.equal(rv.hunks.length, 1);
  assert.deepEqual(rv.hunks[0].lines, ["print('hello from kiln')"]);
  // Inline: the proposed line is in the document, below the cursor's line, green.
  assert.equal(ed.document.getText(), "x = 1\nprint('hello from kiln')\ny = 2\n", 'the proposed line shown in the document');
  assert.deepEqual(inlineRows(ed), { green: [1], red: [] });
  const lenses = await vscode.codeLenses(ed.document);
  assert.deepEqual(lenses.map((l) => l.command!.command),
    ['kiln.acceptHunk', 'kiln.rejectHunk', 'kiln.acceptAll', 'kiln.rejectAll', 'workbench.actions.view.problems']);
  assert.equal(lenses[0].command!.title, 'kiln 1/1: Accept');
  assert.equal(lenses[4].command!.title, '(+1 −0) verdict allow');
  assert.ok(lenses.every((l) => l.range.start.line === 1), 'the CodeLens is on the hunk');
  assert.equal(vscode.recorded.context.get('kiln.reviewing'), true);
  // Accept through the CodeLens's own command and arguments.
  const lens = lenses[0].command!;
  assert.equal(await vscode.commands.executeCommand(lens.command, ...lens.arguments!), true);
  assert.equal(ed.document.getText(), "x = 1\nprint('hello from kiln')\ny = 2\n", 'accepted below the cursor');
  assert.equal((await vscode.codeLenses(ed.document)).length, 0, 'the review ended');
  assert.deepEqual(inlineRows(ed), { green: [], red: [] }, 'no decoration left');
  assert.equal(vscode.recorded.context.get('kiln.reviewing'), false);
  assert.ok(!/writing|thinking/.test(s!.kiln.status.item.text), 'the status is idle again');
});

test('intent: accept one hunk and reject another; the document holds exactly that', needKiln, async () => {
  await setup('fake-long');
  const want = longProgram();
  const mine = [...want];
  mine[5] = '    n = 0  # mine';
  mine[mine.length - 1] = "    print('mine')";
  const ed = vscode.openEditor(tmpFile('long.py'), 'python', mine.join('\n') + '\n');
  ed.selection = new vscode.Selection(new vscode.Position(0, 0), new vscode.Position(mine.length, 0));
  const rv = await ask('compute stats');
  assert.equal(rv.hunks.length, 2, 'two hunks');
  const lenses = await vscode.codeLenses(ed.document);
  assert.equal(lenses.filter((l) => l.command!.command === 'kiln.acceptHunk').length, 2, 'a CodeLens per hunk');
  // The first hunk replaces line 6: the old line stays, red, the proposed
  // one under it, green; the second hunk, one line further down.
  let lines = ed.document.getText().split('\n');
  assert.deepEqual([lines[5], lines[6]], [mine[5], want[5]]);
  const last = want.length;
  assert.deepEqual([lines[last], lines[last + 1]], [mine[want.length - 1], want[want.length - 1]]);
  assert.deepEqual(inlineRows(ed), { green: [6, last + 1], red: [5, last] });
  assert.deepEqual(lenses.filter((l) => l.command!.command === 'kiln.acceptHunk').map((l) => l.range.start.line), [5, last]);
  assert.equal(await vscode.commands.executeCommand('kiln.acceptHunk', ed.document.uri.toString(), 0), true);
  lines = ed.document.getText().split('\n');
  assert.equal(lines[5], want[5], 'hunk 1 written, its old line gone');
  assert.deepEqual(inlineRows(ed), { green: [last], red: [last - 1] }, 'hunk 2 moved up a line');
  assert.equal(await vscode.commands.executeCommand('kiln.rejectHunk', ed.document.uri.toString(), 1), true);
  const expect = [...want];
  expect[expect.length - 1] = "    print('mine')";
  assert.equal(ed.document.getText(), expect.join('\n') + '\n', 'hunk 2 rejected: exactly what was there');
  assert.equal(s!.kiln.reviews.get(ed.document.uri), undefined, 'the review ended');
  assert.deepEqual(inlineRows(ed), { green: [], red: [] });
  assert.ok(message(/review done: 1 of 2 hunks accepted/));
});

test('intent: accept-all of several hunks writes the proposal; one undo brings the old lines back', needKiln, async () => {
  await setup('fake-long');
  const want = longProgram();
  const mine = [...want];
  mine[1] = '# one';
  mine[11] = '# two';
  mine[mine.length - 1] = '# three';
  const ed = vscode.openEditor(tmpFile('three.py'), 'python', mine.join('\n') + '\n');
  ed.selection = new vscode.Selection(new vscode.Position(0, 0), new vscode.Position(mine.length, 0));
  const rv = await ask('compute stats');
  assert.equal(rv.hunks.length, 3);
  assert.deepEqual(inlineRows(ed).green.length, 3, 'three proposed lines shown');
  assert.equal(await vscode.commands.executeCommand('kiln.acceptAll'), true);
  assert.equal(ed.document.getText(), want.join('\n') + '\n');
  // Accept All is one edit: one undo puts the three old lines back beside
  // the proposed ones, as the review showed them (the review is over: they
  // are the person's text now).
  vscode.undo(ed.document);
  assert.equal(ed.document.getText().split('\n').length, want.length + 3 + 1);
  assert.deepEqual(vscode.openTabs().filter((u) => !u.startsWith('file:')), [], 'no tab but the file');
});

test('intent: reject-all leaves the document as it was, and nothing to run', needKiln, async () => {
  await setup('fake-coder');
  const ed = vscode.openEditor(tmpFile('r.py'), 'python', 'a = 1\n');
  await ask('greet');
  assert.equal(await vscode.commands.executeCommand('kiln.rejectAll'), true);
  assert.equal(ed.document.getText(), 'a = 1\n');
  assert.equal([...ed.decorations.values()].flat().length, 0, 'the decorations are gone');
  assert.equal(s!.kiln.reviews.runnable(ed.document as any), undefined);
});

test('intent: the review follows the person\'s edits around and inside a hunk', needKiln, async () => {
  await setup('fake-coder');
  const ed = vscode.openEditor(tmpFile('stale.py'), 'python', 'a = 1\nb = 2\n');
  await ask('greet');
  assert.equal(ed.document.getText(), "a = 1\nprint('hello from kiln')\nb = 2\n");
  // An edit above the hunk moves it down; the person's edit stays.
  vscode.type(ed.document, new vscode.Range(0, 0, 0, 5), 'a = 100\nz = 0');
  assert.deepEqual(inlineRows(ed), { green: [2], red: [] });
  // An edit inside the proposed line: the person edits the proposal.
  vscode.type(ed.document, new vscode.Range(2, 7, 2, 12), 'HELLO');
  assert.deepEqual(inlineRows(ed), { green: [2], red: [] });
  assert.equal(await vscode.commands.executeCommand('kiln.acceptAll'), true);
  assert.equal(ed.document.getText(), "a = 100\nz = 0\nprint('HELLO from kiln')\nb = 2\n", 'accepted as edited, the other edit kept');
});

test('intent: rejecting after the person edited elsewhere removes only the proposed lines', needKiln, async () => {
  await setup('fake-coder');
  const ed = vscode.openEditor(tmpFile('stale3.py'), 'python', 'a = 1\nb = 2\n');
  await ask('greet');
  vscode.type(ed.document, new vscode.Range(3, 0, 3, 0), 'c = 3\n');
  assert.equal(await vscode.commands.executeCommand('kiln.rejectAll'), true);
  assert.equal(ed.document.getText(), 'a = 1\nb = 2\nc = 3\n');
});

test('intent: the document never keeps unreviewed proposed lines: undo, a manual save, a new intent', needKiln, async () => {
  await setup('fake-coder');
  const ed = vscode.openEditor(tmpFile('abandon.py'), 'python', 'a = 1\n');
  await ask('greet');
  assert.equal(ed.document.getText(), "a = 1\nprint('hello from kiln')\n");
  // Undo of the review's write takes the proposed lines out: the hunk is rejected.
  vscode.undo(ed.document);
  assert.equal(ed.document.getText(), 'a = 1\n');
  assert.equal(s!.kiln.reviews.get(ed.document.uri), undefined, 'the review ended');
  assert.ok(message(/review done: 0 of 1 hunks accepted/));
  // A manual save writes the document without the pending lines.
  await ask('greet');
  await ed.document.save();
  assert.equal(ed.document.getText(), 'a = 1\n', 'saved without the proposal');
  await waitFor(() => s!.kiln.reviews.get(ed.document.uri) === undefined, 2000, 'the review to end');
  assert.ok(message(/saved without the unreviewed lines: 1 pending hunk of proposal p\d+ rejected/));
  // A new intent while a review is open: the old pending lines go first.
  await ask('greet');
  const rv2 = await ask('greet');
  assert.equal(ed.document.getText(), "a = 1\nprint('hello from kiln')\n", 'one proposal shown, not two');
  assert.ok(message(/a new intent: the review of proposal p\d+ ended, 1 pending hunk rejected/));
  // VS Code closing: deactivate rejects what is pending.
  assert.ok(rv2);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  await require('../src/extension').deactivate();
  assert.equal(ed.document.getText(), 'a = 1\n', 'closing VS Code leaves no proposed line behind');
});

test('intent: a document changed while the model wrote cannot take the proposal', needKiln, async () => {
  await setup('fake-slow');
  const ed = vscode.openEditor(tmpFile('stale2.py'), 'python', 'a = 1\n');
  const p = vscode.commands.executeCommand('kiln.intent', 'greet');
  await waitFor(() => (vscode.contentOf(PREVIEW_URI) ?? '') !== '', 20000, 'the first code');
  vscode.type(ed.document, new vscode.Range(0, 0, 0, 5), 'a = 2');
  await p;
  assert.ok(message(/changed while the model wrote/));
  assert.equal(await vscode.commands.executeCommand('kiln.acceptAll'), false);
  assert.equal(ed.document.getText(), 'a = 2\n');
});

test('intent: after the document moved on, kiln.run runs the document, not the proposal', needKiln, async () => {
  await setup('fake-coder');
  const ed = vscode.openEditor(tmpFile('moved.py'), 'python', 'print("mine")\n');
  await ask('greet');
  vscode.type(ed.document, new vscode.Range(0, 0, 0, 0), '# edited\n');
  assert.ok(s!.kiln.reviews.get(ed.document.uri), 'the review follows the change');
  const end = await vscode.commands.executeCommand('kiln.run');
  assert.equal(end.result?.exitCode, 0, JSON.stringify(end));
  assert.match(s!.kiln.runner.text, /^kiln run: moved\.py as you kept it \(proposal p\d+: 1 still pending, not run\)\nmine\n/);
  assert.ok(!s!.kiln.runner.text.includes('hello from kiln'), 'the proposal did not run');
});

// Issue 36: rejected hunks never run, whether they delete a line of the
// user's or add one of the model's.
test('intent: kiln.run after rejecting a deleted and an added hunk runs neither', needKiln, async () => {
  await setup('fake-long');
  const want = longProgram();
  // The model deletes a line of mine (hunk 1), changes one (hunk 2) and
  // adds its last line (hunk 3).
  const mine = [...want.slice(0, 3), "print('mine kept')", ...want.slice(3, want.length - 1)];
  assert.equal(mine[14], 'data_0 = [x * 1 for x in range(10)]', 'the line hunk 2 changes');
  mine[14] = 'data_0 = [x * 100 for x in range(10)]';
  assert.match(want[want.length - 1], /^print\('median of means'/, 'the line hunk 3 adds');
  const ed = vscode.openEditor(tmpFile('kept.py'), 'python', mine.join('\n') + '\n');
  ed.selection = new vscode.Selection(new vscode.Position(0, 0), new vscode.Position(mine.length, 0));
  const rv = await ask('compute stats');
  assert.equal(rv.hunks.length, 3, 'three hunks');
  const uri = ed.document.uri.toString();
  assert.equal(await vscode.commands.executeCommand('kiln.rejectHunk', uri, 0), true);
  assert.equal(await vscode.commands.executeCommand('kiln.acceptHunk', uri, 1), true);
  assert.equal(await vscode.commands.executeCommand('kiln.rejectHunk', uri, 2), true);
  assert.ok(message(/review done: 1 of 3 hunks accepted/));
  const kept = [...want.slice(0, 3), "print('mine kept')", ...want.slice(3, want.length - 1)];
  assert.equal(ed.document.getText(), kept.join('\n') + '\n', 'hunk 2 written, 1 and 3 not');
  // The person clicks into the document: no selection decides what runs.
  ed.selection = new vscode.Selection(new vscode.Position(0, 0), new vscode.Position(0, 0));
  const end = await vscode.commands.executeCommand('kiln.run');
  assert.equal(end.error, undefined, JSON.stringify(end.error));
  assert.match(s!.kiln.runner.text, new RegExp('^kiln run: kept\\.py as you kept it ' +
    '\\(proposal p1: hunk 2 accepted; 1, 3 rejected\\)\n' +
    'mine kept\n4\\.50 2\\.87\n9\\.00 5\\.74\n13\\.50 8\\.62\n18\\.00 11\\.49\n' +
    '\\[exit 0, \\d+ ms\\]\n$'));
  assert.ok(!s!.kiln.runner.text.includes('median of means'), 'the rejected added line did not run');
});

// Issue 36, each alone: a rejected ADDED hunk's output is absent from the
// run; a rejected DELETED hunk's line stays and its output appears.
async function threeHunks(name: string): Promise<{ ed: vscode.TextEditor; want: string[]; mine: string[]; uri: string }> {
  await setup('fake-long');
  const want = longProgram();
  // Hunk 1 deletes a line of mine, hunk 2 changes one, hunk 3 adds the
  // model's last line.
  const mine = [...want.slice(0, 3), "print('mine kept')", ...want.slice(3, want.length - 1)];
  mine[14] = 'data_0 = [x * 100 for x in range(10)]';
  const ed = vscode.openEditor(tmpFile(name), 'python', mine.join('\n') + '\n');
  ed.selection = new vscode.Selection(new vscode.Position(0, 0), new vscode.Position(mine.length, 0));
  const rv = await ask('compute stats');
  assert.deepEqual(rv.hunks.map((h: any) => [h.oldCount, h.lines.length]), [[1, 0], [1, 1], [0, 1]], 'deleted, changed, added');
  assert.ok(ed.selection.isEmpty, 'the selection made to ask does not stay through the review');
  return { ed, want, mine, uri: ed.document.uri.toString() };
}

test('intent: kiln.run after rejecting an ADDED hunk: its output is absent', needKiln, async () => {
  const { ed, want, uri } = await threeHunks('added.py');
  assert.equal(await vscode.commands.executeCommand('kiln.acceptHunk', uri, 0), true);
  assert.equal(await vscode.commands.executeCommand('kiln.acceptHunk', uri, 1), true);
  assert.equal(await vscode.commands.executeCommand('kiln.rejectHunk', uri, 2), true);
  assert.equal(ed.document.getText(), want.slice(0, want.length - 1).join('\n') + '\n', 'the added line is not in the document');
  const end = await vscode.commands.executeCommand('kiln.run');
  assert.equal(end.error, undefined, JSON.stringify(end.error));
  assert.equal(end.result?.exitCode, 0);
  assert.match(s!.kiln.runner.text, new RegExp('^kiln run: added\\.py as you kept it \\(proposal p1: hunks 1, 2 accepted; 3 rejected\\)\n' +
    '4\\.50 2\\.87\n9\\.00 5\\.74\n13\\.50 8\\.62\n18\\.00 11\\.49\n\\[exit 0, \\d+ ms\\]\n$'), s!.kiln.runner.text);
  assert.ok(!s!.kiln.runner.text.includes('median of means'), 'the rejected added line did not run');
});

test('intent: kiln.run after rejecting a DELETED hunk: the line stays and its output appears', needKiln, async () => {
  const { ed, want, uri } = await threeHunks('deleted.py');
  assert.equal(await vscode.commands.executeCommand('kiln.rejectHunk', uri, 0), true);
  assert.equal(await vscode.commands.executeCommand('kiln.acceptHunk', uri, 1), true);
  assert.equal(await vscode.commands.executeCommand('kiln.acceptHunk', uri, 2), true);
  assert.equal(ed.document.getText(), [...want.slice(0, 3), "print('mine kept')", ...want.slice(3)].join('\n') + '\n',
    'the line the model deleted is still there');
  const end = await vscode.commands.executeCommand('kiln.run');
  assert.equal(end.error, undefined, JSON.stringify(end.error));
  assert.equal(end.result?.exitCode, 0);
  assert.match(s!.kiln.runner.text, new RegExp('^kiln run: deleted\\.py as you kept it \\(proposal p1: hunks 2, 3 accepted; 1 rejected\\)\n' +
    'mine kept\n4\\.50 2\\.87\n9\\.00 5\\.74\n13\\.50 8\\.62\n18\\.00 11\\.49\nmedian of means 11\\.25\n\\[exit 0, \\d+ ms\\]\n$'), s!.kiln.runner.text);
});

test('intent: kiln.run approves the proposal, streams its output; explain', needKiln, async () => {
  await setup('fake-coder', { 'kiln.explain': true });
  const ed = vscode.openEditor(tmpFile('ok.py'), 'python', '');
  await ask('greet');
  await vscode.commands.executeCommand('kiln.acceptAll');
  assert.equal(ed.document.getText(), "print('hello from kiln')\n");
  const end = await vscode.commands.executeCommand('kiln.run');
  assert.equal(end.error, undefined, JSON.stringify(end.error));
  assert.equal(end.result.ok, true);
  const text = s!.kiln.runner.text;
  assert.match(text, /^kiln run: proposal p\d+\n/);
  assert.match(text, /hello from kiln\n/);
  assert.match(text, /It added the numbers and printed the total\./, 'the explanation');
  assert.match(text, /\[exit 0, \d+ ms\]/);
  assert.equal(vscode.recorded.channels.get('Kiln')!.text, text, 'the output channel holds it');
});

test('intent: with kiln.autoRepair, repair attempts are shown one by one and the repair runs', needKiln, async () => {
  await setup('fake-repair', { 'kiln.repairAttempts': 3, 'kiln.autoRepair': true });
  vscode.openEditor(tmpFile('rep.py'), 'python', '');
  await ask('sum 0..2');
  await vscode.commands.executeCommand('kiln.acceptAll');
  const end = await vscode.commands.executeCommand('kiln.run');
  assert.equal(end.result?.ok, true, JSON.stringify(end));
  const text = s!.kiln.runner.text;
  const i1 = text.indexOf('attempt 1 ran: it exited with status 1');
  const i2 = text.indexOf('attempt 2 repaired (verdict allow)');
  const i3 = text.indexOf('  | print(total)');
  const i4 = text.indexOf('\n3\n');
  assert.ok(i1 >= 0 && i2 > i1 && i3 > i2 && i4 > i3, `in order:\n${text}`);
});

const WRONG = ['total = 0', 'for n in range(3):', '    total += n', 'print(totl)'];
const RIGHT = ['total = 0', 'for n in range(3):', '    total += n', 'print(total)'];

test('intent: after an automatic repair the review holds, and Accept writes, the code that ran', needKiln, async () => {
  await setup('fake-repair', { 'kiln.repairAttempts': 3, 'kiln.autoRepair': true });
  const ed = vscode.openEditor(tmpFile('trust.py'), 'python', '# the average\n');
  const first = await ask('print the average of 3, 4 and 5');
  assert.deepEqual(first.hunks.map((h: any) => h.lines), [WRONG], 'the first proposal (it fails)');
  // Run it while its review is open: it fails, is repaired, and runs.
  const end = await vscode.commands.executeCommand('kiln.run');
  assert.equal(end.result?.ok, true, JSON.stringify(end));
  const rv = s!.kiln.reviews.get(ed.document.uri);
  assert.ok(rv, 'a review is open');
  assert.notEqual(rv.proposal.proposalId, first.proposal.proposalId, 'the review follows the repaired proposal');
  assert.deepEqual(rv.hunks.map((h) => h.lines), [RIGHT], 'the review holds the code that ran');
  assert.equal(ed.document.getText(), ['# the average', ...RIGHT, ''].join('\n'), 'the repaired lines shown, the failed ones gone');
  assert.deepEqual(inlineRows(ed), { green: [1, 2, 3, 4], red: [] });
  assert.ok(message(new RegExp(`review now shows ${rv.proposal.proposalId}`)), 'the switch is reported');
  assert.equal(await vscode.commands.executeCommand('kiln.acceptAll'), true);
  assert.equal(ed.document.getText(), ['# the average', ...RIGHT, ''].join('\n'), 'Accept wrote the code that ran');
});

test('intent: a repair waits for approval: it opens a review of the repaired line, and Run runs it', needKiln, async () => {
  await setup('fake-repair', { 'kiln.repairAttempts': 3 });
  const ed = vscode.openEditor(tmpFile('trust2.py'), 'python', '# sum\n');
  const first = await ask('sum 0..2');
  await vscode.commands.executeCommand('kiln.acceptAll');
  assert.equal(ed.document.getText(), ['# sum', ...WRONG, ''].join('\n'), 'the failing code written');
  const end = await vscode.commands.executeCommand('kiln.run');
  // The repair is a new proposal: it did not run (kiln.autoRepair is off).
  assert.equal(end.result?.ok, false, JSON.stringify(end));
  assert.equal(end.result?.stopped, 'needs_approval', JSON.stringify(end));
  assert.equal(end.result?.attempts?.length, 1, 'one run: the first proposal');
  assert.doesNotMatch(s!.kiln.runner.text, /\n3\n/, 'the repaired code did not run');
  assert.match(s!.kiln.runner.text, /the repaired code p\d+ did not run: it needs your approval/);
  const rv = s!.kiln.reviews.get(ed.document.uri);
  assert.ok(rv, 'a new review');
  assert.notEqual(rv.proposal.proposalId, first.proposal.proposalId);
  assert.deepEqual(rv.hunks.map((h) => h.lines), [['print(total)']], 'one hunk: the changed line');
  assert.equal(await vscode.commands.executeCommand('kiln.acceptAll'), true);
  assert.equal(ed.document.getText(), ['# sum', ...RIGHT, ''].join('\n'), 'the document holds the code that ran');
  // Now the document is the repaired proposal: kiln.run approves it.
  const again = await vscode.commands.executeCommand('kiln.run');
  assert.equal(again.result?.ok, true, JSON.stringify(again));
  assert.match(s!.kiln.runner.text, new RegExp(`^kiln run: proposal ${rv.proposal.proposalId}\n`));
  assert.match(s!.kiln.runner.text, /\n3\n/);
});

test('intent: a denied proposal is shown as one: verdict on the hunk, an error, diagnostics on its lines, a modal before Accept', needKiln, async () => {
  await setup('fake-deny');
  const ed = vscode.openEditor(tmpFile('deny.py'), 'python', 'x = 1\n');
  const rv = await ask('fetch a page');
  assert.equal(rv.proposal.verdict, 'deny');
  // The proposed lines are rows 1-3, under the person's own line 0.
  assert.deepEqual(inlineRows(ed), { green: [1, 2, 3], red: [] });
  const ds = vscode.diagnosticsOf('kiln-proposal', ed.document.uri);
  assert.ok(ds.length > 0, 'the validator diagnostics are on the proposal');
  for (const d of ds) {
    assert.ok(d.range.start.line >= 1 && d.range.start.line <= 3, `on a proposed line, not the person's: ${JSON.stringify(d.range)} ${d.message}`);
  }
  const socket = ds.find((d) => /socket/i.test(d.message) && d.severity === vscode.DiagnosticSeverity.Error);
  assert.ok(socket, 'the denying finding');
  assert.ok(ed.document.lineAt(socket!.range.start.line).text.includes('socket'), 'under the line it is about');
  // The verdict and the rules on the hunk's CodeLens; no plain Accept.
  const lenses = await vscode.codeLenses(ed.document);
  const title = lenses[4].command!.title;
  assert.match(title, /^\$\(error\) \(\+3 −0\) verdict deny: /);
  assert.ok(title.includes(String(socket!.code)), `the rule is named: ${title}`);
  assert.deepEqual(lenses.slice(0, 4).map((l) => l.command!.title), ['kiln 1/1: Accept Denied…', 'Reject', 'Accept All Denied…', 'Reject All']);
  // An error, not an info toast.
  assert.ok(message(/^error: kiln: proposal p\d+ is DENIED by the validator/), JSON.stringify(vscode.recorded.messages));
  assert.ok(!message(/^info: .*verdict deny/), 'no info toast');
  // Accept asks first, in a modal naming the rule; saying no writes nothing.
  assert.equal(await vscode.commands.executeCommand('kiln.acceptAll'), false);
  const modal = vscode.recorded.messages.find((m) => m.modal && /DENIED/.test(m.text));
  assert.ok(modal, 'a modal');
  assert.deepEqual(modal!.items, ['Accept Denied Code']);
  assert.ok(modal!.detail!.includes(String(socket!.code)), modal!.detail);
  assert.ok(s!.kiln.reviews.get(ed.document.uri), 'still under review');
  assert.deepEqual(inlineRows(ed).green, [1, 2, 3]);
  // Cannot be run.
  const end = await vscode.commands.executeCommand('kiln.run');
  assert.equal(end.error?.message, 'denied');
  assert.equal(s!.kiln.runner.current, undefined, 'nothing runs');
  vscode.answers.message.push('Accept Denied Code');
  assert.equal(await vscode.commands.executeCommand('kiln.acceptAll'), true);
  assert.equal(ed.document.getText(), 'x = 1\n' + "import socket\ns = socket.create_connection(('example.com', 80))\nprint(s)\n");
});

test('intent: kiln.cancel stops an intent while the model writes', needKiln, async () => {
  await setup('fake-slow');
  const ed = vscode.openEditor(tmpFile('cancel.py'), 'python', 'x = 1\n');
  const p = vscode.commands.executeCommand('kiln.intent', 'greet');
  await waitFor(() => (vscode.contentOf(PREVIEW_URI) ?? '') !== '', 20000, 'the first code in the preview');
  assert.equal(await vscode.commands.executeCommand('kiln.cancel'), true);
  const end = await p;
  assert.equal(end.cancelled, true);
  assert.ok(message(/intent cancelled/));
  assert.equal(s!.kiln.intents.pending.size, 0);
  assert.equal(s!.kiln.reviews.get(ed.document.uri), undefined, 'no review');
  assert.equal(ed.document.getText(), 'x = 1\n');
  // The server is free again: the next intent goes through.
  await ask('greet');
});

test('intent: the notification\'s Cancel button cancels too', needKiln, async () => {
  await setup('fake-slow');
  vscode.openEditor(tmpFile('cancel2.py'), 'python', 'x = 1\n');
  const p = vscode.commands.executeCommand('kiln.intent', 'greet');
  await waitFor(() => vscode.recorded.progressSources.length > 0 && (vscode.contentOf(PREVIEW_URI) ?? '') !== '', 20000, 'the progress');
  vscode.recorded.progressSources[0].cancel();
  const end = await p;
  assert.equal(end.cancelled, true);
});

test('intent: a model failure is explained and changes nothing', needKiln, async () => {
  await setup('fake-500');
  const ed = vscode.openEditor(tmpFile('f.py'), 'python', 'x = 1\n');
  const end = await vscode.commands.executeCommand('kiln.intent', 'greet');
  assert.ok(end.error, 'an error');
  assert.ok(message(/^error: kiln: intent: /), 'reported');
  assert.equal(ed.document.getText(), 'x = 1\n');
  assert.ok(!/thinking|writing/.test(s!.kiln.status.item.text));
});
