import './stub/register';
// kiln.session against the real server: Python runs share one live
// namespace (session/open), the variables view lists what it holds,
// Reset forgets it, Close ends it, intents about Python carry its id, and
// without the setting every run starts empty as before.
import * as assert from 'node:assert/strict';
import { after, afterEach, test } from 'node:test';
import { activate, haveKiln, kilnBin, message, modelSettings, Session, tmpFile, stopFakeModel } from './helpers';
import * as vscode from './stub/vscode';

let s: Session | undefined;
afterEach(async () => { await s?.dispose(); s = undefined; });
after(() => stopFakeModel());
const needKiln = haveKiln() ? {} : { skip: `no kiln server at ${kilnBin} (make build/kiln)` };

async function run(code: string): Promise<any> {
  vscode.openEditor(tmpFile('cell.py'), 'python', code);
  return vscode.commands.executeCommand('kiln.run');
}

test('session: x = 41 in one run, print(x + 1) in the next gives 42; the variables view lists x', needKiln, async () => {
  s = await activate({ 'kiln.session': true });
  const first = await run('x = 41\nimport math\n');
  assert.ok(first.result, JSON.stringify(first) + s.kiln.runner.text);
  assert.equal(first.result.exitCode, 0, s.kiln.runner.text);
  assert.match(first.result.sessionId, /^s\d+$/);
  const second = await run('print(x + 1)\n');
  assert.ok(second.result, JSON.stringify(second) + s.kiln.runner.text);
  assert.equal(second.result.exitCode, 0, s.kiln.runner.text);
  assert.equal(second.result.sessionId, first.result.sessionId, 'the same session');
  assert.match(s.kiln.runner.text, /kiln run: cell\.py in session s\d+\n42\n/);
  assert.equal(vscode.recorded.context.get('kiln.sessionOpen'), true);

  const vars = await vscode.commands.executeCommand('kiln.refreshVariables');
  assert.deepEqual(vars.map((v: any) => `${v.name}: ${v.type}: ${v.summary}`), ['x: int: 41'],
    'x only: no module, no _name, no display(), nothing the listing made');
  const tree = vscode.recorded.trees.get('kiln.variables')!;
  const item = tree.provider.getTreeItem(tree.provider.getChildren()[0]);
  assert.equal(item.label, 'x');
  assert.equal(item.description, 'int: 41');
  assert.ok(!/KILN-VARIABLES/.test(s.kiln.runner.text), 'the listing is not in the output');
  // The listing left nothing behind in the session.
  const third = await run('print(sorted(k for k in globals() if "kiln" in k))\n');
  assert.match(s.kiln.runner.text, /\n\[\]\n/, s.kiln.runner.text);
  assert.equal(third.result.exitCode, 0);

  assert.equal(await vscode.commands.executeCommand('kiln.resetSession'), true);
  const after = await run('print(x)\n');
  assert.equal(after.result.exitCode, 1, 'x is gone after the reset');
  assert.equal(after.result.error?.name, 'NameError');
  assert.deepEqual(await vscode.commands.executeCommand('kiln.refreshVariables'), []);

  const id = s.kiln.session.id;
  assert.equal(await vscode.commands.executeCommand('kiln.closeSession'), true);
  assert.equal(s.kiln.session.id, undefined);
  await assert.rejects(s.kiln.server.request('snippet/run', { sessionId: id, code: 'x = 1' }), 'the server forgot it');
  const fresh = await run('print("fresh")\n');
  assert.notEqual(fresh.result.sessionId, id, 'the next run opens a new session');
});

test('session: off by default: each run starts empty, and shell runs never go into a session', needKiln, async () => {
  s = await activate();
  await run('x = 41\n');
  const second = await run('print(x + 1)\n');
  assert.equal(second.result.exitCode, 1, 'no state between runs without kiln.session');
  assert.equal(second.result.sessionId, undefined);
  await s.dispose();
  s = await activate({ 'kiln.session': true });
  vscode.openEditor(tmpFile('a.sh'), 'shellscript', 'echo one-shot\n');
  const sh = await vscode.commands.executeCommand('kiln.run');
  assert.equal(sh.result.exitCode, 0);
  assert.equal(sh.result.sessionId, undefined);
  assert.equal(s.kiln.session.id, undefined, 'no session opened for a shell run');
  assert.equal(await vscode.commands.executeCommand('kiln.resetSession'), false);
  assert.ok(message(/no session is open/));
});

test('session: an intent about Python carries the session\'s id, so its proposal runs in the session', needKiln, async () => {
  s = await activate(await modelSettings('fake-coder', { 'kiln.session': true }));
  await run('greeting = "hi"\n');
  const sent: any[] = [];
  s.kiln.server.observe((method, params, outcome) => {
    if (method === 'intent/run' && !outcome) {
      sent.push(params);
    }
  });
  const ed = vscode.openEditor(tmpFile('ask.py'), 'python', '');
  vscode.answers.input.push('greet the user');
  await vscode.commands.executeCommand('kiln.intent');
  assert.equal(sent.length, 1);
  assert.equal(sent[0].sessionId, s.kiln.session.id);
  await vscode.commands.executeCommand('kiln.acceptAll', ed.document.uri.toString());
  const end = await vscode.commands.executeCommand('kiln.run');
  assert.equal(end.result?.result?.sessionId ?? end.result?.sessionId, s.kiln.session.id, JSON.stringify(end));
});
