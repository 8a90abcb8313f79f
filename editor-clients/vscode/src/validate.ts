// validate.ts: kiln.validate, the validator's diagnostics of a document (or
// of the selection) in the Problems view, and on save when
// kiln.validateOnSave is set.
import * as vscode from 'vscode';
import { languageOf, lineSelection } from './document';
import { toDiagnostic } from './review';
import { errorOf, MissingBinaryError, Server } from './server';

export class Validator {
  readonly diagnostics: vscode.DiagnosticCollection;

  constructor(private readonly server: Server,
    private readonly notify: (msg: string, level?: 'info' | 'warn' | 'error') => void) {
    this.diagnostics = vscode.languages.createDiagnosticCollection('kiln');
  }

  /** Validate doc (or the lines of selection); resolves to the server's
   * answer after the diagnostics are set. */
  async validate(doc: vscode.TextDocument, selection?: vscode.Selection, quiet = false): Promise<any> {
    const range = lineSelection(doc, selection);
    const code = range ? doc.getText(range) : doc.getText();
    const row0 = range ? range.start.line : 0;
    const version = doc.version;
    let result: any;
    try {
      result = await this.server.request('snippet/validate', { language: languageOf(doc), code });
    } catch (e: any) {
      if (e instanceof MissingBinaryError) {
        throw e;
      }
      this.notify(`validate: ${errorOf(e).message}`, 'error');
      return undefined;
    }
    if (doc.isClosed || doc.version !== version) {
      // The text moved on while kiln checked it: these positions are old.
      return result;
    }
    const diags = (result?.diagnostics ?? []).map((d: any) => toDiagnostic(d, row0));
    this.diagnostics.set(doc.uri, diags);
    const msg = `kiln: ${result?.verdict ?? '?'}, ${diags.length} diagnostic${diags.length === 1 ? '' : 's'}`;
    if (!quiet) {
      vscode.window.setStatusBarMessage(msg, 5000);
    }
    return result;
  }

  dispose(): void {
    this.diagnostics.dispose();
  }
}
