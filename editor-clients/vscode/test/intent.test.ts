// kiln.intent and the review of its proposal, against the real server and
// the fake model server: the code streams into the preview, the proposal
// shows as decorations and CodeLens per hunk, hunks are accepted and
// rejected one by one (document text checked), accepting is one undo step,
// a changed document is never overwritten, a denied proposal cannot run,
// an intent can be cancelled while the model writes.
import './stub/register';
import * as assert from 'node:assert/strict';
import { after, afterEach, test } from 'node:test';
import { PREVIEW_URI } from '../src/intent';
import { activate, haveKiln, kilnBin, longProgram, message, modelSettings, Session, stopFakeModel, tmpFile, waitFor } from './helpers';
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
  assert.equal(ed.document.getText(), 'x = 1\ny = 2\n', 'nothing written before review');
  const rv = end.review;
  assert.equal(rv.hunks.length, 1);
  assert.deepEqual(rv.hunks[0].lines, ["print('hello from kiln')"]);
  // The inline diff: the added line as ghost text, and the CodeLens.
  const added = [...ed.decorations.values()].flat();
  assert.ok(added.some((d: any) => /hello from kiln/.test(d.renderOptions?.after?.contentText ?? '')), 'the added line is drawn');
  const lenses = await vscode.codeLenses(ed.document);
  assert.deepEqual(lenses.map((l) => l.command!.command),
    ['kiln.acceptHunk', 'kiln.rejectHunk', 'kiln.acceptAll', 'kiln.rejectAll', 'kiln.showDiff']);
  assert.equal(vscode.recorded.context.get('kiln.reviewing'), true);
  // Accept through the CodeLens's own command and arguments.
  const lens = lenses[0].command!;
  assert.equal(await vscode.commands.executeCommand(lens.command, ...lens.arguments!), true);
  assert.equal(ed.document.getText(), "x = 1\nprint('hello from kiln')\ny = 2\n", 'accepted below the cursor');
  assert.equal((await vscode.codeLenses(ed.document)).length, 0, 'the review ended');
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
  // The first hunk replaces line 6: its old line is marked removed.
  const removed = [...ed.decorations.values()].flat().filter((d: any) => !d.renderOptions);
  assert.ok(removed.some((d: any) => d.range.start.line === 5), 'the replaced line is marked');
  assert.equal(await vscode.commands.executeCommand('kiln.acceptHunk', ed.document.uri.toString(), 0), true);
  let lines = ed.document.getText().split('\n');
  assert.equal(lines[5], want[5], 'hunk 1 written');
  assert.equal(lines[want.length - 1], "    print('mine')", 'hunk 2 not yet');
  assert.equal(await vscode.commands.executeCommand('kiln.rejectHunk', ed.document.uri.toString(), 1), true);
  const expect = [...want];
  expect[expect.length - 1] = "    print('mine')";
  assert.equal(ed.document.getText(), expect.join('\n') + '\n');
  assert.equal(s!.kiln.reviews.get(ed.document.uri), undefined, 'the review ended');
  assert.ok(message(/review done: 1 of 2 hunks accepted/));
  // One undo takes the accepted hunk back.
  vscode.undo(ed.document);
  assert.equal(ed.document.getText(), mine.join('\n') + '\n');
});

test('intent: accept-all of several hunks is one undo step; the diff view shows the proposal', needKiln, async () => {
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
  await vscode.commands.executeCommand('kiln.showDiff');
  const diff = vscode.recorded.executed.find((e) => e.command === 'vscode.diff');
  assert.ok(diff, 'vscode.diff was opened');
  assert.equal(diff!.args[0].toString(), ed.document.uri.toString());
  assert.equal(vscode.contentOf(diff!.args[1]), want.join('\n') + '\n', 'its right side is the proposed text');
  assert.equal(await vscode.commands.executeCommand('kiln.acceptAll'), true);
  assert.equal(ed.document.getText(), want.join('\n') + '\n');
  vscode.undo(ed.document);
  assert.equal(ed.document.getText(), mine.join('\n') + '\n', 'one undo restores the document');
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

test('intent: a document changed since the request is never overwritten', needKiln, async () => {
  await setup('fake-coder');
  const ed = vscode.openEditor(tmpFile('stale.py'), 'python', 'a = 1\nb = 2\n');
  await ask('greet');
  vscode.type(ed.document, new vscode.Range(0, 0, 0, 5), 'a = 100');
  assert.equal(await vscode.commands.executeCommand('kiln.acceptAll'), false);
  assert.equal(ed.document.getText(), 'a = 100\nb = 2\n', 'the document keeps the change');
  assert.ok(message(/changed since the request/), 'the conflict is reported');
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
  assert.equal(s!.kiln.reviews.get(ed.document.uri), undefined, 'the review ended at the change');
  const end = await vscode.commands.executeCommand('kiln.run');
  assert.equal(end.result?.exitCode, 0, JSON.stringify(end));
  assert.match(s!.kiln.runner.text, /^kiln run: moved\.py\nmine\n/);
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
  const added = [...ed.decorations.values()].flat();
  assert.ok(added.some((d: any) => /total = 0/.test(d.renderOptions?.after?.contentText ?? '') &&
    /print\(total\)/.test(d.hoverMessage?.value ?? '')), `the repaired lines are drawn: ${JSON.stringify(added)}`);
  assert.equal(ed.document.getText(), '# the average\n', 'nothing written before Accept');
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

test('intent: a denied proposal shows its diagnostics and cannot be run', needKiln, async () => {
  await setup('fake-deny');
  const ed = vscode.openEditor(tmpFile('deny.py'), 'python', '');
  const rv = await ask('fetch a page');
  assert.equal(rv.proposal.verdict, 'deny');
  const ds = vscode.diagnosticsOf('kiln-proposal', ed.document.uri);
  assert.ok(ds.length > 0, 'the validator diagnostics are on the proposal');
  assert.match(ds[0].message, /^proposed line \d+: /);
  const end = await vscode.commands.executeCommand('kiln.run');
  assert.equal(end.error?.message, 'denied');
  assert.equal(s!.kiln.runner.current, undefined, 'nothing runs');
  assert.ok(message(/denied/));
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
