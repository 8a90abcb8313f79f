// override.ts: Run Anyway, on purpose. When snippet/run refuses code the
// validator denies (-32803, data.kind "denied"), a modal names every rule
// the code breaks (code, line and message, control characters made
// visible). Where kiln's config allows overrides (validator.allowOverride,
// which the refusal reports as data.overrideAllowed) it offers Run
// Anyway, asks once more, and only then sends the same code again with
// "override": true; otherwise it says how to allow it. Code the model
// wrote is never run past a deny (the server refuses), so this is for
// the person's own code, or code they accepted and made theirs.
import * as vscode from 'vscode';
import { visible } from './hunks';
import { RunEnd, Runner } from './run';

export const RUN_ANYWAY = 'Run Anyway…';
export const RUN_IT = 'Run Denied Code';

/** The rules a refusal names, one line each: "PY-NET-SOCKET (line 2): msg". */
export function deniedRules(data: any): string[] {
  const out: string[] = [];
  for (const d of Array.isArray(data?.diagnostics) ? data.diagnostics : []) {
    const line = Number.isInteger(d?.range?.start?.line) ? ` (line ${d.range.start.line + 1})` : '';
    out.push(`${visible(String(d?.code ?? 'kiln'))}${line}: ${visible(String(d?.message ?? ''))}`);
  }
  return out;
}

/** After kiln.run's snippet/run answered end: when the validator denied
 * it, explain and, where allowed and confirmed twice, run it anyway.
 * Returns the second run's end, or undefined when nothing more ran. */
export async function runAnyway(runner: Runner, doc: vscode.TextDocument, sel: vscode.Range | undefined,
  kept: { header: string; code: string } | undefined, end: RunEnd): Promise<RunEnd | undefined> {
  const err = end.error;
  if (!err || err.code !== -32803 || err.data?.kind !== 'denied') {
    return undefined;
  }
  const list = deniedRules(err.data);
  const allowed = err.data?.overrideAllowed === true;
  const detail = `${list.join('\n') || visible(err.message)}\n\n` + (allowed
    ? 'Your kiln config allows running denied code on purpose (validator.allowOverride). It runs in kiln\'s sandbox all the same.'
    : 'Nothing ran. To be offered Run Anyway, set "validator": {"allowOverride": true} in kiln\'s config ' +
      '(~/.config/kiln/config.json); or change the code so the validator allows it.');
  const title = `kiln: the validator denied this code (${list.length} rule${list.length === 1 ? '' : 's'}): nothing ran`;
  const first = allowed
    ? await vscode.window.showErrorMessage(title, { modal: true, detail }, RUN_ANYWAY)
    : await vscode.window.showErrorMessage(title, { modal: true, detail });
  if (!allowed || first !== RUN_ANYWAY) {
    return undefined;
  }
  const second = await vscode.window.showWarningMessage(
    `kiln: run code the validator denied? It breaks ${list.length} rule${list.length === 1 ? '' : 's'}.`,
    { modal: true, detail: `${list.join('\n')}\n\nThis is your decision, not the validator's.` }, RUN_IT);
  if (second !== RUN_IT) {
    return undefined;
  }
  return runner.runDocument(doc, sel, kept?.header, { code: kept?.code, override: true });
}
