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
import { html } from '../src/display';
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
  assert.equal(reset.items.length, 2);
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
  // The page renders HTML in a sandboxed frame with scripts off, images as data: only.
  const page = panel.webview.html;
  assert.match(page, /Content-Security-Policy" content="default-src 'none'; img-src data:/);
  assert.match(page, /setAttribute\('sandbox', ''\)/);
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

test('run/status: a run waiting for a sandbox slot says queued in the status bar and the output, then runs', needKiln, async () => {
  // One slot (from kiln's config file): a first run sent here holds it, so
  // kiln.run's run waits in the server's queue.
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-vscode-cfg-'));
  fs.mkdirSync(path.join(home, 'kiln'));
  fs.writeFileSync(path.join(home, 'kiln/config.json'), JSON.stringify({ sandbox: { maxConcurrentRuns: 1 } }));
  const saved = process.env.XDG_CONFIG_HOME;
  process.env.XDG_CONFIG_HOME = home;
  try {
    s = await activate();
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
    assert.doesNotMatch(s.kiln.status.item.text, /queued|running/);
  } finally {
    if (saved === undefined) {
      delete process.env.XDG_CONFIG_HOME;
    } else {
      process.env.XDG_CONFIG_HOME = saved;
    }
  }
  assert.deepEqual([1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111].map(ordinal),
    ['1st', '2nd', '3rd', '4th', '11th', '12th', '13th', '21st', '22nd', '23rd', '101st', '111th']);
});
