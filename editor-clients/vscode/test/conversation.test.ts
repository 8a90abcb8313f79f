import './stub/register';
// Kiln: Show Conversation against the real server and the fake model: each
// turn holds the intent, the model's explanation, the code with its
// verdict, each repair, the output, displays, workspace changes and the
// ledger; text from the model is stored with control characters visible
// and the page puts it in with textContent only, under a strict policy.
import * as assert from 'node:assert/strict';
import { after, afterEach, test } from 'node:test';
import { conversationHtml } from '../src/conversation';
import { activate, haveKiln, kilnBin, modelSettings, Session, stopFakeModel, tmpFile, tmpFolder, waitFor } from './helpers';
import * as vscode from './stub/vscode';

let s: Session | undefined;
afterEach(async () => { await s?.dispose(); s = undefined; });
after(() => stopFakeModel());
const needKiln = haveKiln() ? {} : { skip: `no kiln server at ${kilnBin} (make build/kiln)` };

test('conversation: intent, explanation, code and verdict, output, workspace changes and the ledger, in the panel', needKiln, async () => {
  const folder = tmpFolder({ 'data.txt': 'x\n' });
  s = await activate(await modelSettings('fake-coder', { 'kiln.explain': true }), folder);
  await vscode.commands.executeCommand('kiln.showConversation');
  const panel = vscode.recorded.webviews.find((w: any) => w.viewType === 'kiln.conversation');
  assert.ok(panel, 'the panel opened');
  const ed = vscode.openEditor(`${folder}/ask.py`, 'python', '');
  vscode.answers.input.push('greet the user');
  await vscode.commands.executeCommand('kiln.intent');
  await vscode.commands.executeCommand('kiln.acceptAll', ed.document.uri.toString());
  const end = await vscode.commands.executeCommand('kiln.run');
  assert.ok(end.result, JSON.stringify(end));
  const t = s.kiln.conversation.turns[0];
  assert.equal(t.kind, 'intent');
  assert.equal(t.intent, 'greet the user');
  assert.equal(t.file, 'ask.py');
  assert.equal(t.explanation, 'It prints the result.\n\nIt added the numbers and printed the total.',
    'the model\'s prose, then its explanation of the result');
  assert.match(t.code ?? '', /print\('hello from kiln'\)/);
  assert.equal(t.verdict, 'allow');
  assert.equal(t.output, 'hello from kiln\n');
  assert.match(t.ledger ?? '', /^1 attempt · exit 0 · \d+ ms · CPU \d+ ms · peak memory \d+\.\d MiB · \d+ \+ \d+ tokens$/);
  // The page got it, at most 100 ms later.
  await waitFor(() => panel.posted.some((m: any) => m.type === 'turns' && m.turns[0]?.ledger), 2000, 'the page');

  // A direct run that writes a file: its own turn, with the change.
  vscode.openEditor(tmpFile('w.py'), 'python', 'open("made.txt", "w").write("hi")\n');
  await vscode.commands.executeCommand('kiln.run');
  const w = s.kiln.conversation.turns[1];
  assert.equal(w.kind, 'run');
  assert.deepEqual(w.changes, ['created made.txt (2 bytes)']);
  assert.match(w.ledger ?? '', /^exit 0 · \d+ ms/);
});

test('conversation: each repair is a step of its turn, with its code and verdict', needKiln, async () => {
  s = await activate(await modelSettings('fake-repair', { 'kiln.repairAttempts': 3, 'kiln.autoRepair': true }));
  const ed = vscode.openEditor(tmpFile('r.py'), 'python', '');
  vscode.answers.input.push('sum the numbers');
  await vscode.commands.executeCommand('kiln.intent');
  await vscode.commands.executeCommand('kiln.acceptAll', ed.document.uri.toString());
  await vscode.commands.executeCommand('kiln.run');
  const t = s.kiln.conversation.turns[0];
  const repaired = t.repairs.find((r) => r.stage === 'repaired');
  assert.ok(repaired, JSON.stringify(t.repairs));
  assert.equal(repaired!.verdict, 'allow');
  assert.match(repaired!.code ?? '', /total/);
  assert.match(t.ledger ?? '', /^2 attempts · exit 0/);
});

test('conversation: what the model or a program writes is text: control characters shown, no markup, strict policy', needKiln, async () => {
  s = await activate(await modelSettings('fake-coder'));
  vscode.openEditor(tmpFile('h.py'), 'python', '');
  vscode.answers.input.push('<img src=x onerror=alert(1)> [[answer:hostile]]');
  await vscode.commands.executeCommand('kiln.intent');
  const t = s.kiln.conversation.turns[0];
  assert.equal(t.intent, '<img src=x onerror=alert(1)> [[answer:hostile]]', 'kept as text; the page sets textContent');
  assert.ok(!/[\u0000-\u0008\u000b-\u001f\u007f\u202a-\u202e\u2066-\u2069]/.test(JSON.stringify(t).replace(/\\n/g, '')),
    'no raw control or bidi character reaches the page');
  assert.match(t.explanation ?? '', /\u241b\[32mverdict: allow/, 'the escape is shown as ␛');
  assert.match(t.code ?? '', /print\(6 \* 7\)\u241b\[1A/);
  const page = conversationHtml('N0NCE', 'vscode-webview-resource:');
  assert.match(page, /content="default-src 'none'; img-src data: vscode-webview-resource:; style-src 'unsafe-inline' vscode-webview-resource:; script-src 'nonce-N0NCE'; frame-src 'none'/);
  assert.doesNotMatch(page, /innerHTML|insertAdjacentHTML|document\.write|eval\(/);
  assert.equal((page.match(/<script/g) ?? []).length, 1);
});
