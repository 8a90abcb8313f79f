// intent.ts: kiln.intent. The intent goes to the server with the document's
// text, version and selection (or the line below the cursor); progress shows
// in the status bar and in a notification with Cancel, the code streams into
// a preview document beside the editor as the model writes it, and the
// proposal comes back for review in the document itself (review.ts): the
// preview closes then, whatever the outcome, so the review is the one
// surface left.
import * as vscode from 'vscode';
import { item, languageOf, lineSelection, lspRange } from './document';
import { closeProposalTabs, PROPOSAL_SCHEME, ProposalDocuments, Review, Reviews } from './review';
import { errorOf, MissingBinaryError, Server } from './server';

interface Pending {
  uri: string;
  snapshot: string;
  version: number;
  code: string;
  partials: number;
  cts: vscode.CancellationTokenSource;
  progress?: vscode.Progress<{ message?: string }>;
  previewShown: boolean;
  /** The preview being opened: awaited before it is closed, or a late
   * tab would stay open after the proposal. */
  previewOpening?: Promise<unknown>;
}

export interface IntentEnd {
  error?: { message: string; code?: number; data?: any };
  review?: Review;
  cancelled?: boolean;
}

export const PREVIEW_URI = vscode.Uri.from({ scheme: PROPOSAL_SCHEME, path: '/preview/kiln-preview' });

export class Intents {
  readonly pending = new Map<string, Pending>();
  // One conversation per window, so follow-up intents have context.
  readonly sessionId = `vscode-${process.pid}-${Date.now()}`;
  private seq = 0;

  constructor(private readonly server: Server, private readonly reviews: Reviews,
    private readonly docs: ProposalDocuments,
    private readonly notify: (msg: string, level?: 'info' | 'warn' | 'error') => void,
    private readonly busy: (what: string | undefined) => void) {
    server.on('intent/partial', (p) => this.partial(p));
    server.onDeath((why) => {
      for (const [uri, req] of this.pending) {
        this.pending.delete(uri);
        req.cts.cancel();
        this.notify(`intent: ${why}`, 'error');
      }
    });
  }

  private partial(p: any): void {
    if (!p || typeof p !== 'object' || typeof p.text !== 'string') {
      return;
    }
    // The request this belongs to: the only one in flight (requestId is
    // the JSON-RPC id, which the language client does not hand out).
    let req: Pending | undefined;
    for (const r of this.pending.values()) {
      req = r;
    }
    if (!req) {
      return;
    }
    req.code = p.reset ? p.text : req.code + p.text;
    req.partials++;
    this.docs.set(PREVIEW_URI, req.code);
    const lines = req.code.replace(/\n$/, '').split('\n');
    req.progress?.report({ message: `writing: ${lines[lines.length - 1].slice(0, 60)}` });
    this.busy('writing');
    if (!req.previewShown) {
      req.previewShown = true;
      req.previewOpening = Promise.resolve(vscode.workspace.openTextDocument(PREVIEW_URI).then(
        (d) => vscode.window.showTextDocument(d, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true, preview: true }))).catch(() => undefined);
    }
  }

  /** kiln.intent on editor with text (asked for when undefined). */
  async run(editor: vscode.TextEditor, text?: string): Promise<IntentEnd> {
    const doc = editor.document;
    const uri = doc.uri.toString();
    if (this.pending.has(uri)) {
      this.notify('an intent is already being worked on for this document (Kiln: Cancel)', 'warn');
      return { error: { message: 'busy' } };
    }
    if (text === undefined) {
      text = await vscode.window.showInputBox({
        title: 'Kiln: Ask',
        prompt: 'What should the code do? The selection (or the line below the cursor) is where it goes.',
        placeHolder: 'e.g. plot monthly totals from sales.csv',
        ignoreFocusOut: true,
      });
    }
    if (!text) {
      return { cancelled: true };
    }
    // A review still open here ends first, its pending hunks rejected:
    // the new request is made of the document without unreviewed lines.
    const open = this.reviews.get(doc.uri);
    if (open) {
      await this.reviews.abandon(open, 'a new intent');
    }
    const token = `kiln-intent-${++this.seq}`;
    const params: any = {
      intent: text,
      textDocument: item(doc),
      language: languageOf(doc),
      sessionId: this.sessionId,
      workDoneToken: token,
    };
    const sel = lineSelection(doc, editor.selection);
    if (sel) {
      params.range = lspRange(sel);
    } else {
      const row = editor.selection.active.line;
      // Below the cursor's line, whole lines.
      params.position = row + 1 < doc.lineCount ? { line: row + 1, character: 0 }
        : { line: row, character: doc.lineAt(row).range.end.character };
    }
    const req: Pending = {
      uri, snapshot: doc.getText(), version: doc.version, code: '', partials: 0,
      cts: new vscode.CancellationTokenSource(), previewShown: false,
    };
    this.pending.set(uri, req);
    this.docs.set(PREVIEW_URI, '');
    this.busy('thinking');
    return vscode.window.withProgress({
      location: vscode.ProgressLocation.Notification,
      title: 'kiln',
      cancellable: true,
    }, async (progress, ptoken) => {
      req.progress = progress;
      progress.report({ message: 'thinking' });
      ptoken.onCancellationRequested(() => { this.cancel(doc); });
      let progressSub: vscode.Disposable | undefined;
      try {
        progressSub = await this.server.progress(token, (v: any) => {
          if (v && typeof v.message === 'string' && this.pending.get(uri) === req) {
            if (v.kind !== 'end') {
              this.busy(v.message);
            }
            if (!v.message.startsWith('writing') || req.partials === 0) {
              progress.report({ message: v.message });
            }
          }
        });
      } catch {
        // The server did not start: the request below says why.
      }
      let end: IntentEnd;
      try {
        const result = await this.server.request('intent/run', params, req.cts.token);
        end = { review: undefined };
        if (this.pending.get(uri) !== req) {
          return { cancelled: true };
        }
        const proposal = result?.proposal ?? result;
        this.docs.set(PREVIEW_URI, String(proposal?.code ?? req.code));
        await req.previewOpening;
        await closeProposalTabs();
        end.review = await this.reviews.start(doc, proposal, req.snapshot, req.version);
      } catch (e: any) {
        if (this.pending.get(uri) !== req) {
          return { cancelled: true };
        }
        if (e instanceof MissingBinaryError) {
          throw e;
        }
        end = { error: errorOf(e) };
        this.notify(`intent: ${end.error!.message}`, 'error');
        await req.previewOpening;
        await closeProposalTabs();
      } finally {
        progressSub?.dispose();
        if (this.pending.get(uri) === req) {
          this.pending.delete(uri);
        }
        this.busy(undefined);
      }
      return end;
    });
  }

  /** Cancel the intent in flight for doc; true if there was one. */
  cancel(doc?: vscode.TextDocument): boolean {
    const uri = doc?.uri.toString();
    const req = uri ? this.pending.get(uri) : this.pending.values().next().value;
    if (!req) {
      return false;
    }
    this.pending.delete(req.uri);
    req.cts.cancel();
    this.busy(undefined);
    void Promise.resolve(req.previewOpening).then(closeProposalTabs);
    this.notify('intent cancelled');
    return true;
  }
}
