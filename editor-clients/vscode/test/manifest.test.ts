import './stub/register';
// package.json against the code: activation on commands and languages,
// never on startup; every contributed command registered by activate();
// every setting the code reads declared; the engine the client library
// needs.
import * as assert from 'node:assert/strict';
import * as fs from 'fs';
import * as path from 'path';
import { test } from 'node:test';
import { activate } from './helpers';
import * as vscode from './stub/vscode';

const root = path.join(__dirname, '../..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));

test('manifest: activates on its commands and languages, not on startup', () => {
  const ev: string[] = pkg.activationEvents;
  assert.ok(!ev.includes('*') && !ev.includes('onStartupFinished'), JSON.stringify(ev));
  for (const l of ['python', 'shellscript', 'javascript']) {
    assert.ok(ev.includes(`onLanguage:${l}`), l);
  }
  assert.ok(ev.includes('onCommand:kiln.intent'));
  const lc = JSON.parse(fs.readFileSync(path.join(root, 'node_modules/vscode-languageclient/package.json'), 'utf8'));
  assert.equal(pkg.engines.vscode, lc.engines.vscode, 'the engine vscode-languageclient needs');
});

test('manifest: every contributed command is registered, and nothing else', async () => {
  const s = await activate();
  const registered = (await vscode.commands.getCommands()).sort();
  const contributed = pkg.contributes.commands.map((c: any) => c.command).sort();
  assert.deepEqual(registered, contributed);
  for (const name of ['kiln.intent', 'kiln.run', 'kiln.cancel', 'kiln.validate', 'kiln.acceptHunk', 'kiln.rejectHunk',
    'kiln.acceptAll', 'kiln.rejectAll', 'kiln.setApiKey']) {
    assert.ok(contributed.includes(name), name);
  }
  await s.dispose();
});

test('manifest: every setting the code reads is declared; no API key setting', () => {
  const declared = Object.keys(pkg.contributes.configuration.properties);
  const src = fs.readFileSync(path.join(root, 'src/settings.ts'), 'utf8');
  const read = [...src.matchAll(/get<[^>]+>\(['`]([\w.]+)/g)].map((m) => `kiln.${m[1]}`).filter((k) => !k.endsWith('.'));
  for (const k of ['provider', 'url', 'model']) {
    read.push(`kiln.llm.${k}`);
  }
  for (const k of read) {
    assert.ok(declared.includes(k), `${k} is declared`);
  }
  assert.ok(!declared.some((k) => /key|token|secret/i.test(k)), 'secrets are not settings');
});
