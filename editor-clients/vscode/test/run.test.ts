import './stub/register';
// kiln.run and kiln.cancel against the real server: the file or the
// selection runs, stdout and stderr stream into the output channel in the
// order the program wrote them, the exit status and duration follow,
// artifacts and run/display reach the webview, a cancelled run stops.
import * as assert from 'node:assert/strict';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { afterEach, test } from 'node:test';
import { html, MAX_SECTIONS } from '../src/display';
import { ordinal } from '../src/run';
import { activate, haveKiln, kilnBin, message, Session, tmpFile, waitFor } from './helpers';
import * as vscode from './stub/vscode';

let s: Session | undefined;
afterEach(async () => { await s?.dispose(); s = undefined; });
const needKiln = haveKiln() ? {} : { skip: `no kiln server at ${kilnBin} (make build/kiln)` };

test('run: stdout and stderr stream in the order written, then the exit status', needKiln, async () => {
  s = await activate();
  vscode.openEditor(tmpFile('order.py'), 'python', [
    'import sys, time',
    'print("out 1", flush=True)', 'time.sleep(0.05)',
    'print("err 1", file=sys.stderr, flush=True)', 'time.sleep(0.05)',
    'sys.stdout.write("partial"); sys.stdout.flush()', 'time.sleep(0.05)',
    'print("err 2", file=sys.stderr, flush=True)', 'time.sleep(0.05)',
    'print("out 2", flush=True)',
    'sys.exit(3)', ''].join('\n'));
  const seen: string[] = [];
  const ch = vscode.recorded.channels.get('Kiln')!;
  const p = vscode.commands.executeCommand('kiln.run');
  // Output appears while the program runs, not only at the end.
  await waitFor(() => { seen.push(ch.text); return s!.kiln.runner.current === undefined; }, 20000, 'the run');
  const end = await p;
  assert.equal(end.result.exitCode, 3);
  assert.ok(seen.some((t) => t.includes('out 1') && !t.includes('out 2')), 'streamed before the end');
  assert.match(ch.text, /^kiln run: order\.py\nout 1\nerr 1\npartial\nerr 2\nout 2\n\[exit 3, \d+ ms\]\n$/);
  assert.ok(ch.shown > 0, 'the output was shown');
});

test('run: a selection runs alone', needKiln, async () => {
  s = await activate();
  const ed = vscode.openEditor(tmpFile('sel.sh'), 'shellscript', 'echo one\necho two\necho three\n');
  ed.selection = new vscode.Selection(new vscode.Position(1, 0), new vscode.Position(2, 0));
  const end = await vscode.commands.executeCommand('kiln.run');
  assert.equal(end.result.exitCode, 0);
  assert.match(s.kiln.runner.text, /^kiln run: sel\.sh:2-3\ntwo\n\[exit 0/);
});

test('run: control characters in the output are shown, not obeyed', needKiln, async () => {
  s = await activate();
  vscode.openEditor(tmpFile('esc.py'), 'python', 'print("a\\x1b[2Jb\\x07")\n');
  await vscode.commands.executeCommand('kiln.run');
  assert.match(s.kiln.runner.text, /a\u241b\[2Jb\u2407\n/);
});

test('cancel: kiln.cancel kills the run; nothing arrives after it', needKiln, async () => {
  s = await activate();
  vscode.openEditor(tmpFile('slow.py'), 'python', 'import time\nfor i in range(100):\n    print("tick", i, flush=True)\n    time.sleep(0.1)\n');
  const p = vscode.commands.executeCommand('kiln.run');
  await waitFor(() => s!.kiln.runner.text.includes('tick 1'), 20000, 'the first ticks');
  assert.equal(await vscode.commands.executeCommand('kiln.cancel'), true);
  const end = await p;
  assert.equal(end.cancelled, true);
  const at = s.kiln.runner.text;
  assert.match(at, /\[cancelled\]\n$/);
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(s.kiln.runner.text, at, 'no output after the cancel');
  // The server is free: the next run goes.
  vscode.openEditor(tmpFile('after.py'), 'python', 'print("after")\n');
  const next = await vscode.commands.executeCommand('kiln.run');
  assert.equal(next.result.exitCode, 0);
  assert.equal(await vscode.commands.executeCommand('kiln.cancel'), false);
  assert.ok(message(/nothing to cancel/));
});

test('artifacts: images and HTML the program wrote reach the webview', needKiln, async () => {
  s = await activate();
  vscode.openEditor(tmpFile('art.py'), 'python', [
    'import base64',
    `open("/work/out/dot.png", "wb").write(base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="))`,
    // "n =": a bare last expression would be displayed too (its value).
    'n = open("/work/out/t.html", "w").write("<table><tr><td>7</td></tr></table>")',
    ''].join('\n'));
  const end = await vscode.commands.executeCommand('kiln.run');
  assert.equal(end.result.exitCode, 0, s.kiln.runner.text);
  assert.match(s.kiln.runner.text, /artifact \d: dot\.png \(image\/png, \d+ bytes\)/);
  const panel = vscode.recorded.webviews[0];
  assert.ok(panel, 'the webview opened');
  const items = panel.posted.filter((m: any) => m.type === 'display').map((m: any) => m.item);
  assert.ok(items.some((i: any) => typeof i.data['image/png'] === 'string' && i.title === 'dot.png'), JSON.stringify(items));
  assert.ok(items.some((i: any) => /<td>7<\/td>/.test(i.data['text/html'] ?? '')));
  // A webview that loads late asks again and gets everything.
  panel.receive({ type: 'ready' });
  const reset = panel.posted[panel.posted.length - 1];
  assert.equal(reset.type, 'reset');
  assert.equal(reset.sections.length, 1);
  assert.equal(reset.sections[0].items.length, 2);
});

test('run/display: a rich output bundle from the wire reaches the webview in the run', needKiln, async () => {
  const proxy = path.join(__dirname, '../../test/fixtures/display-proxy.py');
  process.env.KILN_REAL_BIN = kilnBin;
  s = await activate({ 'kiln.path': proxy });
  vscode.openEditor(tmpFile('disp.py'), 'python', 'import time\nprint("KILN-TEST-DISPLAY", flush=True)\ntime.sleep(0.3)\nprint("after")\n');
  const end = await vscode.commands.executeCommand('kiln.run');
  delete process.env.KILN_REAL_BIN;
  assert.equal(end.result.exitCode, 0, s.kiln.runner.text);
  const panel = vscode.recorded.webviews[0];
  assert.ok(panel, 'the webview opened');
  const items = panel.posted.filter((m: any) => m.type === 'display').map((m: any) => m.item);
  assert.equal(items.length, 2, JSON.stringify(panel.posted));
  assert.match(items[0].data['image/png'], /^iVBORw0KGgo/);
  assert.equal(items[0].runId, end.result.runId);
  assert.match(items[1].data['text/html'], /<table>/);
  assert.match(s.kiln.runner.text, /KILN-TEST-DISPLAY\n\[display: text\/plain, image\/png: in the Kiln Output panel\]\n\[display: text\/plain, text\/html: in the Kiln Output panel\]\nafter\n/);
  // The page rebuilds program HTML from table and text elements (no
  // frame at all), images as data: only, its own script by nonce.
  const page = panel.webview.html;
  assert.match(page, /Content-Security-Policy" content="default-src 'none'; img-src data:/);
  assert.match(page, /frame-src 'none'/);
  assert.doesNotMatch(page, /iframe'|createElement\('iframe/);
  assert.match(page, /parseFromString/);
  assert.match(page, /script-src 'nonce-/);
  assert.doesNotMatch(html('N', 'x'), /unsafe-eval/);
});

test('run: a missing interpreter or a sandbox failure is an error with the server\'s words', needKiln, async () => {
  s = await activate();
  vscode.openEditor(tmpFile('x.rb'), 'ruby', 'puts 1\n');
  const end = await vscode.commands.executeCommand('kiln.run');
  assert.ok(end.error, 'an error');
  assert.match(end.error.message, /unknown language 'ruby'/);
  assert.ok(message(/^error: kiln: run: .*unknown language 'ruby'/));
  assert.ok(fs.existsSync(kilnBin));
});

test('run/status: two runs compete for one slot (kiln.sandbox.maxConcurrentRuns 1): the status bar says queued with the place in line, running, then done', needKiln, async () => {
  // One slot, from VS Code's settings (initializationOptions): a first run
  // sent here holds it, so kiln.run's run waits in the server's queue.
  s = await activate({ 'kiln.sandbox.maxConcurrentRuns': 1 });
  await s.kiln.server.ensure();
  let first: any;
  const firstDone = s.kiln.server.request('snippet/run', { language: 'bash', code: 'sleep 3' }).then((r) => { first = r; });
  vscode.openEditor(tmpFile('queued.sh'), 'shellscript', 'echo second\n');
  const p = vscode.commands.executeCommand('kiln.run');
  await waitFor(() => s!.kiln.runner.current?.queued !== undefined,
    20000, 'the run to be queued');
  assert.equal(s.kiln.status.item.text, '$(sync~spin) kiln: queued (1st)');
  assert.match(s.kiln.runner.text, /\[queued: 1st in line for a sandbox slot; 1 of 1 busy\]\n$/);
  assert.equal(first, undefined, 'the first run still holds the slot');
  const end = await p;
  await firstDone;
  assert.equal(end.result.exitCode, 0, s.kiln.runner.text);
  assert.match(s.kiln.runner.text,
    /^kiln run: queued\.sh\n\[queued: 1st in line for a sandbox slot; 1 of 1 busy\]\n\[running: a slot is free\]\nsecond\n\[exit 0, \d+ ms\]\n$/);
  assert.match(s.kiln.status.item.text, /^\$\(check\) kiln: done: exit 0, \d+ ms$/);
  const seen = s.kiln.status.seen.filter((t) => /queued|running|done/.test(t));
  assert.deepEqual(seen.map((t) => t.replace(/\d+ ms/, 'N ms')),
    ['$(sync~spin) kiln: running', '$(sync~spin) kiln: queued (1st)', '$(sync~spin) kiln: running', '$(check) kiln: done: exit 0, N ms']);
  // A run that fails says so, and the next one clears it.
  vscode.openEditor(tmpFile('fails.sh'), 'shellscript', 'exit 3\n');
  await vscode.commands.executeCommand('kiln.run');
  assert.match(s.kiln.status.item.text, /^\$\(error\) kiln: failed: exit 3, \d+ ms$/);
  assert.deepEqual([1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111].map(ordinal),
    ['1st', '2nd', '3rd', '4th', '11th', '12th', '13th', '21st', '22nd', '23rd', '101st', '111th']);
});

test('Kiln Output panel: each run is a section (first line, output, displays with human labels, result), kept across runs, capped', needKiln, async () => {
  s = await activate({ 'kiln.session': true });
  vscode.openEditor(tmpFile('cells.py'), 'python', '# two cells\nprint("first run")\nv = 7\nv\n');
  const a = await vscode.commands.executeCommand('kiln.run');
  assert.equal(a.result.exitCode, 0, s.kiln.runner.text);
  vscode.openEditor(tmpFile('table.py'), 'python', [
    'import pandas as pd',
    'print("second run")',
    'display(pd.DataFrame({"a": [1, 2], "b": ["<b>x</b>", "\\x1b[31m"]}))',
    'import matplotlib.pyplot as plt',
    'plt.plot([1, 2, 3])',
    ''].join('\n'));
  const b = await vscode.commands.executeCommand('kiln.run');
  assert.equal(b.result.exitCode, 0, s.kiln.runner.text);
  const secs = s.kiln.display.sections;
  assert.equal(secs.length, 2, 'the first run is still there');
  assert.match(secs[0].title, /^cells\.py: print\("first run"\)$/);
  assert.equal(secs[0].output, 'first run\n7\n', 'a plain value is output text');
  assert.deepEqual(secs[0].items, []);
  assert.match(secs[0].result!, /^exit 0, \d+ ms$/);
  assert.match(secs[1].title, /^table\.py: import pandas as pd$/);
  assert.match(secs[1].output, /^second run\n/);
  assert.deepEqual(secs[1].items.map((i) => i.title), ['table 1', 'figure 1'], 'labels a person reads, no run id');
  // What the webview was told: a section per run, each display under its run.
  // The panel opened at the first picture or table; its page, once
  // loaded, gets every section, the first run's included.
  const panel = vscode.recorded.webviews[0];
  const disp = panel.posted.filter((m: any) => m.type === 'display');
  assert.deepEqual(disp.map((m: any) => m.id), [secs[1].id, secs[1].id]);
  panel.receive({ type: 'ready' });
  const reset = panel.posted[panel.posted.length - 1];
  assert.deepEqual(reset.sections.map((x: any) => x.title), [secs[0].title, secs[1].title]);
  vscode.openEditor(tmpFile('third.py'), 'python', 'print(3)\n');
  await vscode.commands.executeCommand('kiln.run');
  assert.deepEqual(panel.posted.slice(-3).map((m: any) => m.type), ['section', 'output', 'end'],
    'an open panel gets each new run as it goes');
  // A run that fails says so in its result line.
  vscode.openEditor(tmpFile('bad.py'), 'python', 'raise SystemExit(4)\n');
  await vscode.commands.executeCommand('kiln.run');
  assert.equal(s.kiln.display.sections[3].failed, true);
  // Capped: the oldest go.
  for (let i = 0; i < MAX_SECTIONS; i++) {
    s.kiln.display.begin(`filler ${i}`);
  }
  assert.equal(s.kiln.display.sections.length, MAX_SECTIONS);
  assert.equal(s.kiln.display.sections[0].title, 'filler 0');
});
