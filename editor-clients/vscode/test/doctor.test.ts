// Kiln: Doctor: the server's kiln/doctor report in the Kiln output channel,
// each item aligned with its fix, control characters made visible, and a
// message naming what is degraded.
import './stub/register';
import * as assert from 'node:assert/strict';
import * as net from 'node:net';
import { afterEach, test } from 'node:test';
import { activate, haveKiln, kilnBin, Session } from './helpers';
import * as vscode from './stub/vscode';

let s: Session | undefined;
afterEach(async () => { await s?.dispose(); s = undefined; });
const needKiln = haveKiln() ? {} : { skip: `no kiln server at ${kilnBin} (make build/kiln)` };

async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

test('doctor: Kiln: Doctor writes each item with its fix; a closed endpoint is degraded', needKiln, async () => {
  const port = await closedPort();
  s = await activate({ 'kiln.llm.provider': 'ollama', 'kiln.llm.url': `http://127.0.0.1:${port}` });
  const report = await vscode.commands.executeCommand('kiln.doctor');
  assert.ok(report && Array.isArray(report.items), JSON.stringify(report));
  const text: string = vscode.recorded.channels.get('Kiln').text;
  for (const name of ['kernel', 'user namespaces', 'seccomp', 'Landlock', 'sandbox box', 'workspace', 'cgroups',
    'Python', 'Python modules', 'Node', 'model endpoint']) {
    assert.match(text, new RegExp(`^${name} +(ok|degraded|missing) `, 'm'), `${name} in:\n${text}`);
  }
  assert.match(text, new RegExp(`^model endpoint +degraded +ollama http://127.0.0.1:${port}`, 'm'), text);
  assert.ok(text.includes('fix: Start it with \'ollama serve\''), text);
  const m = vscode.recorded.messages.find((x) => /doctor: degraded: .*model endpoint/.test(x.text));
  assert.ok(m && m.level === 'warn', JSON.stringify(vscode.recorded.messages));
});

test('doctor: a control character in a setting is shown, not sent to the output', needKiln, async () => {
  const port = await closedPort();
  s = await activate({ 'kiln.llm.provider': 'ollama', 'kiln.llm.url': `http://127.0.0.1:${port}/\u001b[31mred` });
  await vscode.commands.executeCommand('kiln.doctor');
  const text: string = vscode.recorded.channels.get('Kiln').text;
  assert.ok(!text.includes('\u001b'), 'no raw escape');
  assert.ok(text.includes(`127.0.0.1:${port}/^[[31mred`), text);
});
