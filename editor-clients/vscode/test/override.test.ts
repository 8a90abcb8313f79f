import './stub/register';
// Run Anyway, on purpose (issue 36): the person's own code that the
// validator denies is refused by snippet/run; a modal names every rule,
// and only where kiln's config allows overrides (data.overrideAllowed)
// does it offer Run Anyway, which asks once more and then resends the
// code with "override": true. Against the real server, with its config
// file (validator.allowOverride) written for the test.
import * as assert from 'node:assert/strict';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { after, afterEach, test } from 'node:test';
import { deniedRules, RUN_ANYWAY, RUN_IT } from '../src/override';
import { activate, haveKiln, kilnBin, Session, tmpFile } from './helpers';
import * as vscode from './stub/vscode';

let s: Session | undefined;
const xdg = process.env.XDG_CONFIG_HOME;
afterEach(async () => {
  await s?.dispose();
  s = undefined;
});
after(() => {
  if (xdg === undefined) {
    delete process.env.XDG_CONFIG_HOME;
  } else {
    process.env.XDG_CONFIG_HOME = xdg;
  }
});
const needKiln = haveKiln() ? {} : { skip: `no kiln server at ${kilnBin} (make build/kiln)` };

// A kiln config folder for the server the test starts.
function config(allowOverride: boolean): void {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-vscode-xdg-'));
  fs.mkdirSync(path.join(dir, 'kiln'));
  fs.writeFileSync(path.join(dir, 'kiln', 'config.json'), JSON.stringify({ validator: { allowOverride } }));
  process.env.XDG_CONFIG_HOME = dir;
}

// The person's own code, denied (a network connection), that prints when it runs.
const DENIED = 'import socket\nprint("ran anyway", 6 * 7)\ntry:\n    socket.create_connection(("192.0.2.1", 9), timeout=0.1)\nexcept OSError as e:\n    print("no network:", type(e).__name__)\n';

function modals(): typeof vscode.recorded.messages {
  return vscode.recorded.messages.filter((m) => m.modal);
}

test('override: denied code is refused with a modal naming every rule; without allowOverride no Run Anyway, and how to allow it', needKiln, async () => {
  config(false);
  s = await activate();
  vscode.openEditor(tmpFile('mine.py'), 'python', DENIED);
  const end = await vscode.commands.executeCommand('kiln.run');
  assert.equal(end.error?.code, -32803, JSON.stringify(end));
  assert.equal(end.error?.data?.kind, 'denied');
  assert.equal(end.error?.data?.overrideAllowed, false);
  const m = modals();
  assert.equal(m.length, 1, JSON.stringify(vscode.recorded.messages));
  assert.equal(m[0].level, 'error');
  assert.match(m[0].text, /the validator denied this code \(\d+ rules?\): nothing ran/);
  assert.deepEqual(m[0].items, [], 'no Run Anyway where the config does not allow it');
  for (const d of end.error.data.diagnostics) {
    assert.ok(m[0].detail!.includes(String(d.code)), `rule ${d.code} named: ${m[0].detail}`);
  }
  assert.match(m[0].detail!, /"validator": \{"allowOverride": true\}/, 'says how to allow it');
  assert.doesNotMatch(s.kiln.runner.text, /ran anyway 42/, 'nothing ran');
  assert.ok(!vscode.recorded.messages.some((x) => /cannot run code here/.test(x.text)), 'not mistaken for a sandbox failure');
});

test('override: with allowOverride, Run Anyway asks once more, then runs with override; declining the second runs nothing', needKiln, async () => {
  config(true);
  s = await activate();
  vscode.openEditor(tmpFile('mine2.py'), 'python', DENIED);
  // Run Anyway, then No at the second question: nothing runs.
  vscode.answers.message.push(RUN_ANYWAY, undefined);
  let end = await vscode.commands.executeCommand('kiln.run');
  assert.equal(end.error?.data?.overrideAllowed, true, JSON.stringify(end));
  let m = modals();
  assert.equal(m.length, 2, JSON.stringify(vscode.recorded.messages));
  assert.deepEqual(m[0].items, [RUN_ANYWAY]);
  assert.deepEqual(m[1].items, [RUN_IT]);
  assert.match(m[1].text, /run code the validator denied\?/);
  assert.ok(m[1].detail!.includes(String(end.error.data.diagnostics[0].code)), 'the second question names the rules too');
  assert.doesNotMatch(s.kiln.runner.text, /ran anyway 42/, 'declined: nothing ran');
  // Both yes: the same code runs, with override, and says so.
  vscode.recorded.messages.length = 0;
  vscode.answers.message.push(RUN_ANYWAY, RUN_IT);
  end = await vscode.commands.executeCommand('kiln.run');
  assert.equal(end.error, undefined, JSON.stringify(end));
  assert.equal(end.result?.exitCode, 0);
  assert.match(s.kiln.runner.text, /^kiln run: mine2\.py \(denied code, run anyway on your word\)\nran anyway 42\nno network: /);
  const sent = vscode.recorded.messages.filter((x) => x.modal).length;
  assert.equal(sent, 2, 'two questions before it ran');
});

test('override: the rules are listed with their lines, control characters made visible', () => {
  const lines = deniedRules({ diagnostics: [
    { code: 'PY-NET\u001b[2J', message: 'opens a socket\u202e', range: { start: { line: 3, character: 0 } } },
    { code: 'PY-X', message: 'm' },
  ] });
  assert.deepEqual(lines, ['PY-NET\u241b[2J (line 4): opens a socket<U+202E>', 'PY-X: m']);
});
