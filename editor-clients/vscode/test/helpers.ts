// test/helpers.ts: what every test file needs: the real kiln server
// (KILN_BIN, else the repository's build/kiln), the fake model server of
// tests/fake-model, the extension activated in the stub editor, and bounded
// waits. Every wait has a limit; every server started is stopped.
import './stub/register';
import * as cp from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from './stub/vscode';
import type { Kiln } from '../src/extension';

export const repo = path.resolve(__dirname, '../../../..');
export const kilnBin = process.env.KILN_BIN || path.join(repo, 'build/kiln');

export function haveKiln(): boolean {
  try {
    fs.accessSync(kilnBin, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

let fake: { url: string; proc: cp.ChildProcess } | undefined;

/** The fake model server, started once per test file (stopped at exit). */
export async function fakeModel(): Promise<string> {
  if (fake) {
    return fake.url;
  }
  const portFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-vscode-')), 'port');
  const proc = cp.spawn('python3', [path.join(repo, 'tests/fake-model/fake_model.py'), '--port', '0',
    '--port-file', portFile, '--max-seconds', '300'], { stdio: 'ignore' });
  process.on('exit', () => proc.kill());
  await waitFor(() => fs.existsSync(portFile), 10000, 'the fake model port');
  fake = { url: `http://127.0.0.1:${fs.readFileSync(portFile, 'utf8').trim()}`, proc };
  return fake.url;
}

export function stopFakeModel(): void {
  fake?.proc.kill();
  fake = undefined;
}

export async function waitFor(cond: () => unknown, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) {
      throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

export interface Session {
  kiln: Kiln;
  context: any;
  dispose(): Promise<void>;
}

/** A fresh stub editor with these settings ("kiln.path" defaults to the
 * real server), the folder `folder` open as its workspace when given, and
 * the extension activated in it. */
export async function activate(settings: Record<string, unknown> = {}, folder?: string): Promise<Session> {
  vscode.reset({ 'kiln.path': kilnBin, ...settings });
  if (folder) {
    vscode.setWorkspaceFolder(folder);
  }
  // The extension's module is loaded once; activate() builds a new one each time.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const ext = require('../src/extension');
  const context = vscode.extensionContext();
  const kiln: Kiln = ext.activate(context);
  return {
    kiln, context,
    async dispose() {
      await kiln.server.stop();
      for (const d of context.subscriptions) {
        d.dispose();
      }
    },
  };
}

/** Settings that point kiln at the fake model with this model name. */
export async function modelSettings(model: string, extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  return { 'kiln.llm.provider': 'ollama', 'kiln.llm.url': await fakeModel(), 'kiln.llm.model': model, ...extra };
}

/** A new folder holding these files, readable by the sandbox's user (as
 * root a run's box is nobody). */
export function tmpFolder(files: Record<string, string | Buffer> = {}): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-vscode-ws-'));
  fs.chmodSync(dir, 0o755);
  for (const [name, data] of Object.entries(files)) {
    fs.writeFileSync(path.join(dir, name), data);
  }
  return dir;
}

export function tmpFile(name: string): string {
  return path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-vscode-doc-')), name);
}

/** The messages shown so far, as "level: text" lines. */
export function messages(): string[] {
  return vscode.recorded.messages.map((m) => `${m.level}: ${m.text}`);
}

export function message(re: RegExp): string | undefined {
  return messages().find((m) => re.test(m));
}

/** The fake model's 30-line program, from the fake itself. */
export function longProgram(): string[] {
  const out = cp.execFileSync('python3', ['-c',
    'import sys; sys.path.insert(0, sys.argv[1]); import fake_model; sys.stdout.write(fake_model.long_program())',
    path.join(repo, 'tests/fake-model')], { encoding: 'utf8' });
  const lines = out.split('\n');
  while (lines.length && lines[lines.length - 1] === '') {
    lines.pop();
  }
  return lines;
}

/** The rows of ed that an inline review draws: green (proposed lines, a
 * whole-line background) and red (the old lines, struck through). */
export function inlineRows(ed: any): { green: number[]; red: number[] } {
  const out = { green: [] as number[], red: [] as number[] };
  for (const [key, opts] of ed.decorations as Map<string, any[]>) {
    const type = vscode.decorationTypes.get(key);
    const bg = type?.backgroundColor?.id;
    const which = bg === 'diffEditor.insertedLineBackground' ? out.green
      : bg === 'diffEditor.removedLineBackground' && type?.textDecoration === 'line-through' ? out.red : undefined;
    if (!which || !type?.isWholeLine) {
      continue;
    }
    for (const o of opts) {
      for (let r = o.range.start.line; r <= o.range.end.line; r++) {
        which.push(r);
      }
    }
  }
  return out;
}
