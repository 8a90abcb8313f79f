// The server's lifecycle as the extension drives it: settings reach
// initialize, validate puts diagnostics in the Problems view, a server that
// dies is reported with its stderr and replaced by the next command, a
// missing binary gets a message with the fix.
import './stub/register';
import * as assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { activate, haveKiln, kilnBin, message, Session, tmpFile, waitFor } from './helpers';
import * as vscode from './stub/vscode';

let s: Session | undefined;
afterEach(async () => { await s?.dispose(); s = undefined; });
const needKiln = haveKiln() ? {} : { skip: `no kiln server at ${kilnBin} (make build/kiln)` };

test('validate: the validator\'s diagnostics reach the Problems view', needKiln, async () => {
  s = await activate();
  const ed = vscode.openEditor(tmpFile('v.py'), 'python', 'import os as o\no.system("ls")\nif x\n');
  const result = await vscode.commands.executeCommand('kiln.validate');
  assert.equal(result.verdict, 'deny');
  const ds = vscode.diagnosticsOf('kiln', ed.document.uri);
  assert.ok(ds.length >= 1, `diagnostics: ${JSON.stringify(ds)}`);
  const syntax = ds.find((d) => d.code === 'syntax');
  assert.ok(syntax, 'a syntax error');
  assert.equal(syntax!.range.start.line, 2);
  assert.equal(syntax!.severity, vscode.DiagnosticSeverity.Error);
  assert.ok(vscode.recorded.statusMessages.some((m) => /deny, \d+ diagnostics?/.test(m)), 'the verdict is shown');
  // Fixing the code and validating again clears them.
  vscode.type(ed.document, new vscode.Range(0, 0, 3, 0), 'print(1)\n');
  await vscode.commands.executeCommand('kiln.validate');
  assert.deepEqual(vscode.diagnosticsOf('kiln', ed.document.uri), []);
});

test('validate: a selection is checked alone, its diagnostics at its own lines', needKiln, async () => {
  s = await activate();
  const ed = vscode.openEditor(tmpFile('sel.py'), 'python', 'a = 1\nb = 2\nif x\nc = 3\n');
  ed.selection = new vscode.Selection(new vscode.Position(2, 0), new vscode.Position(3, 0));
  await vscode.commands.executeCommand('kiln.validate');
  const ds = vscode.diagnosticsOf('kiln', ed.document.uri);
  assert.equal(ds.length, 1);
  assert.equal(ds[0].range.start.line, 2);
});

test('validate on save: shell files are checked when kiln.validateOnSave is set', needKiln, async () => {
  s = await activate({ 'kiln.validateOnSave': true });
  const ed = vscode.openEditor(tmpFile('s.sh'), 'shellscript', 'if then\n');
  await ed.document.save();
  await waitFor(() => vscode.diagnosticsOf('kiln', ed.document.uri).length > 0, 10000, 'diagnostics after save');
  assert.equal(vscode.diagnosticsOf('kiln', ed.document.uri)[0].code, 'syntax');
});

test('settings reach initialize as initializationOptions; the API key through the environment', needKiln, async () => {
  s = await activate({ 'kiln.validator.profile': 'strict', 'kiln.sandbox.limits': { wallMs: 4000 }, 'kiln.llm.model': 'm1' });
  await s.context.secrets.store('kiln.apiKey', 'sk-secret');
  const client = await s.kiln.server.ensure();
  assert.deepEqual((client as any).clientOptions.initializationOptions,
    { llm: { model: 'm1' }, validator: { profile: 'strict' }, sandbox: { limits: { wallMs: 4000 } } });
  const pid = s.kiln.server.pid()!;
  const env = require('fs').readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  assert.ok(env.includes('KILN_API_KEY=sk-secret'), 'the key is in the server\'s environment');
  assert.ok(!JSON.stringify((client as any).clientOptions).includes('sk-secret'), 'and nowhere in the options');
  // A strict profile is what the server now uses: a warning under standard is an error.
  assert.ok(s.kiln.server.supports('snippet/validate'));
  assert.match(s.kiln.status.item.text, /kiln/);
});

test('kiln.setApiKey keeps the key in SecretStorage, not in settings', needKiln, async () => {
  s = await activate();
  vscode.answers.input.push('sk-typed');
  assert.equal(await vscode.commands.executeCommand('kiln.setApiKey'), true);
  assert.equal(await s.context.secrets.get('kiln.apiKey'), 'sk-typed');
  assert.equal(vscode.workspace.getConfiguration('kiln').get('apiKey'), undefined);
  vscode.answers.input.push('');
  await vscode.commands.executeCommand('kiln.setApiKey');
  assert.equal(await s.context.secrets.get('kiln.apiKey'), undefined);
});

test('crash: a server that dies is reported with its stderr and replaced by the next command', needKiln, async () => {
  s = await activate();
  const ed = vscode.openEditor(tmpFile('c.py'), 'python', 'print(1)\n');
  await vscode.commands.executeCommand('kiln.validate');
  const pid = s.kiln.server.pid()!;
  assert.ok(pid > 0);
  process.kill(pid, 'SIGKILL');
  await waitFor(() => message(/the server exited \(signal SIGKILL\)/), 10000, 'the crash report');
  assert.match(s.kiln.status.item.text, /crashed/);
  assert.equal(s.kiln.server.lastExit?.signal, 'SIGKILL');
  const result = await vscode.commands.executeCommand('kiln.validate');
  assert.equal(result.verdict, 'allow');
  const pid2 = s.kiln.server.pid()!;
  assert.ok(pid2 && pid2 !== pid, 'a new server');
  assert.deepEqual(vscode.diagnosticsOf('kiln', ed.document.uri), []);
});

test('crash: a run in flight ends with the reason when the server dies', needKiln, async () => {
  s = await activate();
  vscode.openEditor(tmpFile('long.py'), 'python', 'import time\nprint("start", flush=True)\ntime.sleep(30)\n');
  const run = vscode.commands.executeCommand('kiln.run');
  await waitFor(() => s!.kiln.runner.text.includes('start'), 20000, 'the run to start');
  process.kill(s.kiln.server.pid()!, 'SIGKILL');
  await run;
  assert.match(s.kiln.runner.text, /\[the server exited\]/);
  assert.equal(s.kiln.runner.current, undefined);
});

test('missing binary: the message names the fix and offers the setting', async () => {
  s = await activate({ 'kiln.path': '/nonexistent/kiln' });
  vscode.openEditor(tmpFile('m.py'), 'python', 'print(1)\n');
  await vscode.commands.executeCommand('kiln.validate');
  const m = vscode.recorded.messages.find((x) => x.level === 'error');
  assert.ok(m, 'an error message');
  assert.match(m!.text, /cannot find the kiln server '\/nonexistent\/kiln'.*kiln\.path/);
  assert.deepEqual(m!.items, ['Open Settings']);
  assert.equal(s.kiln.server.running(), false);
});

test('missing binary on the PATH: the bare name is looked up there', async () => {
  s = await activate({ 'kiln.path': 'kiln-not-installed-anywhere' });
  vscode.openEditor(tmpFile('m2.py'), 'python', 'print(1)\n');
  vscode.answers.message.push('Open Settings');
  await vscode.commands.executeCommand('kiln.run');
  await waitFor(() => vscode.recorded.executed.some((e) => e.command === 'workbench.action.openSettings'), 5000, 'the settings');
});
