// extension.ts: kiln for VS Code. activate() builds the parts (server,
// review, intents, runs, workspace changes, validation, rich output,
// status bar) and registers the commands; the server starts with the
// first command that needs it.
// The returned object exposes the parts to tests and to other extensions.
import * as vscode from 'vscode';
import { Changes } from './changes';
import { Conversation } from './conversation';
import { DisplayPanel } from './display';
import { doctor } from './doctor';
import { VALIDATED } from './document';
import { Intents } from './intent';
import { PROPOSAL_SCHEME, ProposalDocuments, Reviews } from './review';
import { runAnyway } from './override';
import { Runner } from './run';
import { MissingBinaryError, Server } from './server';
import { Session } from './session';
import { SECRET_KEY, validateOnSave } from './settings';
import { Status } from './status';
import { Validator } from './validate';

export interface Kiln {
  server: Server;
  reviews: Reviews;
  intents: Intents;
  runner: Runner;
  changes: Changes;
  validator: Validator;
  display: DisplayPanel;
  session: Session;
  conversation: Conversation;
  status: Status;
  output: vscode.OutputChannel;
  log: vscode.LogOutputChannel;
}

type Level = 'info' | 'warn' | 'error';

export function activate(context: vscode.ExtensionContext): Kiln {
  const output = vscode.window.createOutputChannel('Kiln');
  const log = vscode.window.createOutputChannel('Kiln Server', { log: true });
  const status = new Status();
  const notify = (msg: string, level: Level = 'info'): void => {
    const text = `kiln: ${msg}`;
    if (level === 'error') {
      void vscode.window.showErrorMessage(text);
    } else if (level === 'warn') {
      void vscode.window.showWarningMessage(text);
    } else {
      void vscode.window.showInformationMessage(text);
    }
  };
  const server = new Server(context.secrets, {
    onState: (state, detail) => {
      status.setState(state, detail);
      if (state === 'ready') {
        void modelName(server, status);
      }
    },
  }, log);
  const docs = new ProposalDocuments();
  const reviews = new Reviews(docs, notify);
  const display = new DisplayPanel();
  const busy = (what: string | undefined) => status.busy(what);
  const runner = new Runner(server, output, display, reviews, notify, busy);
  const changes = new Changes(server, (line) => runner.note(line), display, notify);
  runner.changes = changes;
  // The status bar says how each run ended until the next thing starts.
  context.subscriptions.push(runner.onDidEnd((end) => {
    if (end.summary !== undefined) {
      status.done(end.summary.split('\n')[0].slice(0, 80), end.failed ?? false);
    }
  }));
  const intents = new Intents(server, reviews, docs, notify, busy);
  const validator = new Validator(server, notify);
  const session = new Session(server, notify);
  runner.session = session;
  const conversation = new Conversation(server);
  const kiln: Kiln = { server, reviews, intents, runner, changes, validator, display, session, conversation, status, output, log };
  active = kiln;
  registerSession(context, kiln);

  // A command's failure to reach the server: the missing binary gets its
  // fix, anything else its message.
  const failed = (e: unknown): void => {
    if (e instanceof MissingBinaryError) {
      void vscode.window.showErrorMessage(`kiln: ${e.message}`, 'Open Settings').then((c) => {
        if (c === 'Open Settings') {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'kiln.path');
        }
      });
    } else if (e instanceof Error && !/cancel/i.test(e.message)) {
      notify(e.message, 'error');
    }
  };
  const editorOr = (): vscode.TextEditor | undefined => {
    const ed = vscode.window.activeTextEditor;
    if (!ed) {
      notify('open a file first', 'warn');
    }
    return ed;
  };
  const uriArg = (a: unknown): string | undefined => (typeof a === 'string' ? a : a instanceof vscode.Uri ? a.toString() : undefined);
  const cmd = (name: string, fn: (...args: any[]) => unknown) =>
    context.subscriptions.push(vscode.commands.registerCommand(name, async (...args: any[]) => {
      try {
        return await fn(...args);
      } catch (e) {
        failed(e);
        return undefined;
      }
    }));

  cmd('kiln.intent', async (text?: string) => {
    const ed = editorOr();
    if (ed) {
      return intents.run(ed, typeof text === 'string' ? text : undefined);
    }
    return undefined;
  });
  cmd('kiln.run', async () => {
    const ed = editorOr();
    if (!ed) {
      return undefined;
    }
    const doc = ed.document;
    const sel = ed.selection.isEmpty ? undefined : new vscode.Range(ed.selection.start, ed.selection.end);
    const p = sel ? undefined : reviews.runnable(doc);
    if (p) {
      if (p.proposal.verdict === 'deny') {
        notify('the validator denied this proposal: it cannot be run (see its diagnostics)', 'error');
        return { error: { message: 'denied' } };
      }
      return runner.approve(doc, p.proposal.proposalId, p.version);
    }
    // Part of a proposal kept (a hunk rejected, or some accepted and others
    // pending) runs as the person kept it: the document without the
    // proposed lines still pending, never as the model wrote it.
    const kept = sel ? undefined : reviews.kept(doc);
    if (kept) {
      notify(`running ${doc.uri.path.split('/').pop()} as you kept it (${kept.header})`);
    }
    const end = await runner.runDocument(doc, sel, kept?.header, kept ? { code: kept.code } : undefined);
    return (await runAnyway(runner, doc, sel, kept, end)) ?? end;
  });
  cmd('kiln.cancel', () => {
    if (runner.cancel()) {
      return true;
    }
    if (intents.cancel(vscode.window.activeTextEditor?.document)) {
      return true;
    }
    notify('nothing to cancel');
    return false;
  });
  cmd('kiln.applyChanges', () => changes.apply());
  cmd('kiln.doctor', () => doctor(server, output, notify));
  cmd('kiln.validate', async () => {
    const ed = editorOr();
    return ed ? validator.validate(ed.document, ed.selection) : undefined;
  });
  cmd('kiln.acceptHunk', (uri?: unknown, i?: number) => reviews.accept(uriArg(uri), typeof i === 'number' ? i : undefined));
  cmd('kiln.rejectHunk', (uri?: unknown, i?: number) => reviews.reject(uriArg(uri), typeof i === 'number' ? i : undefined));
  cmd('kiln.acceptAll', (uri?: unknown) => reviews.acceptAll(uriArg(uri)));
  cmd('kiln.rejectAll', (uri?: unknown) => reviews.rejectAll(uriArg(uri)));
  cmd('kiln.showOutput', () => output.show(true));
  cmd('kiln.showOutputPanel', () => display.show());
  cmd('kiln.showConversation', () => conversation.show());
  cmd('kiln.restart', async () => {
    await server.stop();
    await server.ensure();
  });
  cmd('kiln.setApiKey', async () => {
    const key = await vscode.window.showInputBox({
      title: 'Kiln: Set API Key',
      prompt: 'The model server\'s API key, kept in VS Code\'s secret storage (empty: forget it). $KILN_API_KEY wins when set.',
      password: true,
      ignoreFocusOut: true,
    });
    if (key === undefined) {
      return false;
    }
    if (key === '') {
      await context.secrets.delete(SECRET_KEY);
    } else {
      await context.secrets.store(SECRET_KEY, key);
    }
    // The key reaches the server through its environment: start a new one.
    if (server.running()) {
      await server.stop();
    }
    notify(key === '' ? 'API key forgotten' : 'API key stored');
    return true;
  });

  context.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider(PROPOSAL_SCHEME, docs),
    vscode.languages.registerCodeLensProvider([{ scheme: 'file' }, { scheme: 'untitled' }], reviews),
    vscode.workspace.onDidChangeTextDocument((e) => reviews.changed(e)),
    // A manual save never writes proposed lines nobody reviewed.
    vscode.workspace.onWillSaveTextDocument((e) => {
      const edits = reviews.willSave(e.document, e.reason);
      if (edits.length > 0) {
        e.waitUntil(Promise.resolve(edits));
      }
    }),
    vscode.workspace.onDidCloseTextDocument((d) => {
      reviews.closed(d);
      validator.diagnostics.delete(d.uri);
    }),
    vscode.workspace.onDidSaveTextDocument((d) => {
      if (validateOnSave() && VALIDATED.includes(d.languageId)) {
        validator.validate(d, undefined, true).catch(failed);
      }
    }),
    vscode.window.onDidChangeVisibleTextEditors(() => {
      for (const rv of reviews.reviews.values()) {
        reviews.render(rv);
      }
    }),
    output, log, status, reviews, validator, display, conversation,
    { dispose: () => { void server.stop(); } },
  );
  return kiln;
}

// kiln.session: intents about Python carry the session's id (the server
// then tells the model what the session holds, and intent/approve runs the
// proposal there); the Kiln Variables view; its commands.
function registerSession(context: vscode.ExtensionContext, kiln: Kiln): void {
  const { server, session, runner } = kiln;
  server.beforeRequest('intent/run', async (p: any) => {
    if (!session.wants(String(p?.language ?? 'python'))) {
      return p;
    }
    const id = await session.ensure();
    return id ? { ...p, sessionId: id } : p;
  });
  const view = vscode.window.createTreeView('kiln.variables', { treeDataProvider: session });
  const refresh = async () => {
    if (!session.id) {
      view.message = 'No session: turn on kiln.session, then run Python.';
      return session.refresh();
    }
    view.message = undefined;
    return session.refresh();
  };
  // After each run in the session, when the view is on screen.
  context.subscriptions.push(view, session, runner.onDidEnd((end) => {
    if (end.result?.sessionId && view.visible) {
      void refresh();
    }
  }));
  const cmd = (name: string, fn: () => Promise<unknown>) =>
    context.subscriptions.push(vscode.commands.registerCommand(name, fn));
  cmd('kiln.resetSession', () => session.reset());
  cmd('kiln.closeSession', () => session.close());
  cmd('kiln.refreshVariables', refresh);
}

// The model kiln would ask, for the status bar; quiet when it cannot tell.
async function modelName(server: Server, status: Status): Promise<void> {
  if (!server.supports('intent/model')) {
    return;
  }
  try {
    const m = await server.request('intent/model', null);
    status.model = m?.model ? `${m.model}${m.reachable === false ? ' (unreachable)' : ''}` : undefined;
    status.render();
  } catch {
    // Not worth a message: the status shows "ready".
  }
}

let active: Kiln | undefined;

/** VS Code is closing (or reloading): reviews still open end with their
 * pending hunks rejected, so no document (nor its hot-exit backup) keeps
 * proposed lines nobody reviewed. */
export function deactivate(): Thenable<void> | undefined {
  const k = active;
  active = undefined;
  return k?.reviews.abandonAll();
}
