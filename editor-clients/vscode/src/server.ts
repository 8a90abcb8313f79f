// server.ts: the one kiln server of this window. Started by the first
// command through vscode-languageclient over stdio, attached to no
// document (kiln is not a language server for the files, so there is no
// didOpen/didChange traffic). A server that dies is reported once with the
// end of its stderr; whatever was in flight ends with an error, and the next
// command starts a new one. A missing binary is found before the start and
// reported with its fix.
import * as cp from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import {
  CancellationToken, CloseAction, ErrorAction, LanguageClient, LanguageClientOptions,
  ServerOptions, State, WorkDoneProgress,
} from 'vscode-languageclient/node';
import { apiKey, initializationOptions, serverEnv, serverPath } from './settings';

export type NotificationHandler = (params: any) => void;

/** What a request came to, for observers (the conversation view). */
export interface RequestOutcome {
  result?: any;
  error?: { message: string; code?: number; data?: any };
}
/** Called when a request is sent (outcome undefined) and when it ends. */
export type RequestObserver = (method: string, params: any, outcome?: RequestOutcome) => void;
/** Adds to a request's params before it is sent (the session's id). */
export type ParamsHook = (params: any) => Promise<any>;

export interface ServerEvents {
  onState(state: 'starting' | 'ready' | 'stopped' | 'crashed', detail?: string): void;
}

// The end of stderr kept for a crash report.
const STDERR_KEEP = 4096;

/** The binary kiln.path names, resolved on the PATH; undefined if absent. */
export function findBinary(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const isExe = (p: string) => {
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return fs.statSync(p).isFile();
    } catch {
      return false;
    }
  };
  if (name.includes('/')) {
    return isExe(name) ? path.resolve(name) : undefined;
  }
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir && isExe(path.join(dir, name))) {
      return path.join(dir, name);
    }
  }
  return undefined;
}

/** An error of a request as the user should read it: a connection that
 * closed under a request means the server died. */
export function errorOf(e: any): { message: string; code?: number; data?: any } {
  const message = String(e?.message ?? e);
  if (/connection got disposed|connection is closed|connection is disposed/i.test(message)) {
    return { message: 'the server exited' };
  }
  return { message, code: e?.code, data: e?.data };
}

export class MissingBinaryError extends Error {
  constructor(public readonly binary: string) {
    super(`cannot find the kiln server '${binary}': build it with 'make' in kiln's tree and set ` +
      `"kiln.path" to its build/kiln, or put kiln on the PATH`);
  }
}

export class Server {
  private client: LanguageClient | undefined;
  private starting: Promise<LanguageClient> | undefined;
  private child: cp.ChildProcess | undefined;
  private stderrTail = '';
  private stopping = false;
  private readonly handlers = new Map<string, NotificationHandler[]>();
  private readonly deathHandlers: ((why: string) => void)[] = [];
  private readonly observers: RequestObserver[] = [];
  private readonly hooks = new Map<string, ParamsHook>();
  /** The initialize result of the running server. */
  initResult: any;
  /** { code, signal, stderr } of the last server that died unasked. */
  lastExit: { code: number | null; signal: string | null; stderr: string } | undefined;

  constructor(private readonly secrets: vscode.SecretStorage, private readonly events: ServerEvents,
    private readonly log: vscode.LogOutputChannel) {}

  /** Route a notification to handler (several may listen: the client
   * holds one handler per method, dispatch() calls them all). */
  on(method: string, handler: NotificationHandler): void {
    const list = this.handlers.get(method);
    if (list) {
      list.push(handler);
      return;
    }
    this.handlers.set(method, [handler]);
    // A method first heard after the start reaches the running client too.
    this.client?.onNotification(method, (p: unknown) => this.dispatch(method, p));
  }

  /** Stop routing a notification to handler (added with on()). */
  off(method: string, handler: NotificationHandler): void {
    const list = this.handlers.get(method) ?? [];
    const i = list.indexOf(handler);
    if (i >= 0) {
      list.splice(i, 1);
    }
  }

  onDeath(fn: (why: string) => void): void {
    this.deathHandlers.push(fn);
  }

  /** See every request and its outcome (the conversation view does). */
  observe(fn: RequestObserver): void {
    this.observers.push(fn);
  }

  /** Let hook add to every `method` request's params before it is sent:
   * the session adds its id to intent/run this way, so the intent code
   * needs no knowledge of sessions. */
  beforeRequest(method: string, hook: ParamsHook): void {
    this.hooks.set(method, hook);
  }

  private tell(method: string, params: unknown, outcome?: RequestOutcome): void {
    for (const fn of this.observers) {
      try {
        fn(method, params, outcome);
      } catch {
        // An observer's failure is not the request's.
      }
    }
  }

  /** Deliver a notification as if the server had sent it: the handlers
   * registered through on() are exactly what the client calls. */
  dispatch(method: string, params: unknown): void {
    // A copy: a handler may take itself off (off()) while called.
    for (const h of [...(this.handlers.get(method) ?? [])]) {
      h(params);
    }
  }

  running(): boolean {
    return this.client !== undefined && this.client.state === State.Running;
  }

  pid(): number | undefined {
    return this.child?.pid;
  }

  methods(): string[] {
    return this.initResult?.capabilities?.experimental?.methods ?? [];
  }

  supports(method: string): boolean {
    return this.methods().includes(method);
  }

  /** Start the server unless it runs; resolves once it is initialized. */
  async ensure(): Promise<LanguageClient> {
    if (this.client && this.client.state === State.Running) {
      return this.client;
    }
    if (!this.starting) {
      this.starting = this.start().finally(() => { this.starting = undefined; });
    }
    return this.starting;
  }

  private async start(): Promise<LanguageClient> {
    const name = serverPath();
    const bin = findBinary(name);
    if (!bin) {
      throw new MissingBinaryError(name);
    }
    this.events.onState('starting');
    const env: NodeJS.ProcessEnv = { ...process.env, ...serverEnv() };
    const key = await apiKey(this.secrets);
    if (key) {
      // Through the environment, never in initializationOptions: kiln
      // never logs it there, and traces of the initialize request cannot
      // show it.
      env.KILN_API_KEY = key;
    }
    const refused: string[] = [];
    const options = initializationOptions(refused);
    if (refused.length > 0) {
      void vscode.window.showWarningMessage(`kiln: kiln.serverOptions holds ${refused.join(', ')}: not sent. ` +
        'A key is never a setting: use Kiln: Set API Key, which keeps it in VS Code\'s secret storage.');
    }
    this.stderrTail = '';
    const serverOptions: ServerOptions = async () => {
      const child = cp.spawn(bin, [], { env, stdio: ['pipe', 'pipe', 'pipe'] });
      this.child = child;
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (s: string) => {
        this.log.append(s);
        this.stderrTail = (this.stderrTail + s).slice(-STDERR_KEEP);
      });
      child.on('exit', (code, signal) => this.exited(child, code, signal));
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', () => resolve());
        child.once('error', (e) => reject(e));
      });
      return child;
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [],
      initializationOptions: options,
      outputChannel: this.log,
      // A dead server is not restarted behind the user's back: the next
      // command starts a new one.
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue }),
        closed: () => ({ action: CloseAction.DoNotRestart, handled: true }),
      },
      initializationFailedHandler: () => false,
    };
    const client = new LanguageClient('kiln', 'kiln', serverOptions, clientOptions);
    for (const method of this.handlers.keys()) {
      client.onNotification(method, (p: unknown) => this.dispatch(method, p));
    }
    this.stopping = false;
    this.client = client;
    try {
      await client.start();
    } catch (e) {
      this.client = undefined;
      const tail = this.stderrTail.trim();
      this.events.onState('crashed', tail);
      throw new Error(`the kiln server did not start: ${(e as Error).message}` + (tail ? `\n${tail}` : ''));
    }
    this.initResult = client.initializeResult;
    this.events.onState('ready', this.initResult?.serverInfo?.version);
    return client;
  }

  private exited(child: cp.ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (child !== this.child) {
      return;
    }
    const expected = this.stopping;
    this.child = undefined;
    this.client = undefined;
    this.initResult = undefined;
    if (!expected) {
      const stderr = this.stderrTail.trim();
      this.lastExit = { code, signal, stderr };
      const why = signal ? `signal ${signal}` : `code ${code}`;
      this.events.onState('crashed', why);
      const tail = stderr ? `: ${stderr.split('\n').slice(-3).join(' / ')}` : '';
      void vscode.window.showErrorMessage(
        `kiln: the server exited (${why})${tail}. The next command starts a new one.`, 'Show Log')
        .then((choice) => { if (choice === 'Show Log') { this.log.show(true); } });
    } else {
      this.events.onState('stopped');
    }
    for (const fn of this.deathHandlers) {
      fn(expected ? 'the server was stopped' : 'the server exited');
    }
  }

  /** A request to the server, starting it if needed. */
  async request<T = any>(method: string, params: unknown, token?: CancellationToken): Promise<T> {
    const client = await this.ensure();
    const hook = this.hooks.get(method);
    if (hook) {
      params = await hook(params);
    }
    this.tell(method, params);
    try {
      // Never pass an undefined token: vscode-jsonrpc counts it as a second
      // parameter and sends the params as an array.
      const result = await (token ? client.sendRequest<T>(method, params, token) : client.sendRequest<T>(method, params));
      this.tell(method, params, { result });
      return result;
    } catch (e) {
      this.tell(method, params, { error: errorOf(e) });
      throw e;
    }
  }

  /** Listen to $/progress under token (a workDoneToken we send). */
  async progress(token: string, handler: (value: unknown) => void): Promise<vscode.Disposable> {
    const client = await this.ensure();
    return client.onProgress(WorkDoneProgress.type, token, handler);
  }

  /** Stop the server (shutdown, exit; killed after two seconds). */
  async stop(): Promise<void> {
    const client = this.client;
    if (!client) {
      return;
    }
    this.stopping = true;
    try {
      await client.stop(2000);
    } catch {
      this.child?.kill('SIGKILL');
    }
    this.client = undefined;
  }
}
