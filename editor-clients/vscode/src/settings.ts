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

/** kiln.session: Python runs and intents go into one live session. */
export function sessionEnabled(): boolean {
  return cfg().get<boolean>('session') ?? false;
}

export function validateOnSave(): boolean {
  return cfg().get<boolean>('validateOnSave') ?? false;
}

/** initializationOptions: only the sections the user set, so kiln's own
 * config file keeps its say over the rest (as the Neovim plugin does).
 * kiln.serverOptions (any other member of kiln's config) is laid under the
 * named settings, which win; an apiKey in it is dropped and named in
 * `refused`, so the key never travels in the options. */
export function initializationOptions(refused: string[] = []): Record<string, unknown> {
  const c = cfg();
  const extra = c.get<Record<string, unknown>>('serverOptions');
  const out: Record<string, any> = isObject(extra) ? withoutKeys(extra, '', refused) : {};
  const section = (name: string): Record<string, any> => {
    if (!isObject(out[name])) {
      out[name] = {};
    }
    return out[name];
  };
  for (const k of ['provider', 'url', 'model', 'region']) {
    const v = c.get<string>(`llm.${k}`);
    if (v) {
      section('llm')[k] = v;
    }
  }
  const profile = c.get<string>('validator.profile');
  if (profile) {
    section('validator').profile = profile;
  }
  const limits = c.get<Record<string, number>>('sandbox.limits');
  if (isObject(limits) && Object.keys(limits).length > 0) {
    const sb = section('sandbox');
    sb.limits = { ...(isObject(sb.limits) ? sb.limits : {}), ...limits };
  }
  const slots = c.get<number | null>('sandbox.maxConcurrentRuns');
  if (typeof slots === 'number' && Number.isInteger(slots) && slots > 0) {
    section('sandbox').maxConcurrentRuns = slots;
  }
  for (const k of Object.keys(out)) {
    if (isObject(out[k]) && Object.keys(out[k]).length === 0) {
      delete out[k];
    }
  }
  return out;
}

function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// A deep copy of o without any member named like a secret (apiKey,
// token, secret, password); their dotted paths go to `dropped`.
function withoutKeys(o: Record<string, any>, at: string, dropped: string[]): Record<string, any> {
  const out: Record<string, any> = {};
  for (const [k, v] of Object.entries(o)) {
    if (/key|secret|password|^token$/i.test(k)) {
      dropped.push(at + k);
    } else {
      out[k] = isObject(v) ? withoutKeys(v, `${at}${k}.`, dropped) : v;
    }
  }
  return out;
}

/** The environment the server needs besides the key: kiln.llm.awsProfile
 * as AWS_PROFILE (kiln reads the profile from there only, as the AWS CLI
 * does). */
export function serverEnv(): Record<string, string> {
  const profile = cfg().get<string>('llm.awsProfile');
  return profile ? { AWS_PROFILE: profile } : {};
}

/** The API key: $KILN_API_KEY wins, else the one kiln.setApiKey stored. */
export async function apiKey(secrets: vscode.SecretStorage): Promise<string | undefined> {
  if (process.env.KILN_API_KEY) {
    return process.env.KILN_API_KEY;
  }
  return (await secrets.get(SECRET_KEY)) || undefined;
}
