// document.ts: a VS Code document as the protocol sees it: kiln's language
// name for a languageId, the TextDocumentItem, and the selection as a range.
// VS Code counts columns in UTF-16 code units, the encoding the client
// offers kiln, so positions pass through unchanged.
import * as vscode from 'vscode';

// VS Code languageIds whose name is not kiln's. Every other id is sent as
// it is: a canonical name or alias (python, javascript), a language the
// user's kiln config adds, or one kiln refuses with the list it knows.
const LANGUAGES: Record<string, string> = {
  shellscript: 'bash',
  javascriptreact: 'javascript',
  plaintext: 'python',
};

/** The languages kiln validates on save (kiln.validateOnSave). */
export const VALIDATED = ['python', 'shellscript', 'javascript'];

export function languageOf(doc: vscode.TextDocument): string {
  return LANGUAGES[doc.languageId] ?? doc.languageId;
}

export function item(doc: vscode.TextDocument) {
  return {
    uri: doc.uri.toString(),
    languageId: languageOf(doc),
    version: doc.version,
    text: doc.getText(),
  };
}

export function lspRange(r: vscode.Range) {
  return {
    start: { line: r.start.line, character: r.start.character },
    end: { line: r.end.line, character: r.end.character },
  };
}

/** The selection widened to whole lines (the code an intent replaces),
 * or undefined for an empty selection. */
export function lineSelection(doc: vscode.TextDocument, sel: vscode.Selection | undefined): vscode.Range | undefined {
  if (!sel || sel.isEmpty) {
    return undefined;
  }
  const endLine = sel.end.character === 0 && sel.end.line > sel.start.line ? sel.end.line - 1 : sel.end.line;
  const start = new vscode.Position(sel.start.line, 0);
  const end = endLine + 1 < doc.lineCount ? new vscode.Position(endLine + 1, 0) : doc.lineAt(endLine).range.end;
  return new vscode.Range(start, end);
}
