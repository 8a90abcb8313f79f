// settings.ts: the extension's settings (package.json "contributes.
// configuration"), the initializationOptions built from them, and the API
// key, which comes from the environment or VS Code's SecretStorage and
// never from settings.json.
import * as vscode from 'vscode';

export const SECRET_KEY = 'kiln.apiKey';

function cfg(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration('kiln');
}

export function serverPath(): string {
  return cfg().get<string>('path') || 'kiln';
}

export function repairAttempts(): number {
  return cfg().get<number>('repairAttempts') ?? 0;
}

/** kiln.autoRepair: a repair the validator allows runs in the same run
 * (intent/approve's repair.auto). Off: each repair is a new proposal to
 * review and run (unless the server's intent.autoRepair is true). */
export function autoRepair(): boolean {
  return cfg().get<boolean>('autoRepair') ?? false;
}

export function explain(): boolean {
  return cfg().get<boolean>('explain') ?? false;
}

export function validateOnSave(): boolean {
  return cfg().get<boolean>('validateOnSave') ?? false;
}

/** initializationOptions: only the sections the user set, so kiln's own
 * config file keeps its say over the rest (as the Neovim plugin does). */
export function initializationOptions(): Record<string, unknown> {
  const c = cfg();
  const out: Record<string, any> = {};
  const llm: Record<string, string> = {};
  for (const k of ['provider', 'url', 'model']) {
    const v = c.get<string>(`llm.${k}`);
    if (v) {
      llm[k] = v;
    }
  }
  if (Object.keys(llm).length > 0) {
    out.llm = llm;
  }
  const profile = c.get<string>('validator.profile');
  if (profile) {
    out.validator = { profile };
  }
  const limits = c.get<Record<string, number>>('sandbox.limits');
  if (limits && typeof limits === 'object' && Object.keys(limits).length > 0) {
    out.sandbox = { limits };
  }
  return out;
}

/** The API key: $KILN_API_KEY wins, else the one kiln.setApiKey stored. */
export async function apiKey(secrets: vscode.SecretStorage): Promise<string | undefined> {
  if (process.env.KILN_API_KEY) {
    return process.env.KILN_API_KEY;
  }
  return (await secrets.get(SECRET_KEY)) || undefined;
}
