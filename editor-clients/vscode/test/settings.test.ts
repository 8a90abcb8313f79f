import './stub/register';
// Every provider and setting the server has, from VS Code's settings: the
// named ones and kiln.serverOptions reach initialize; the API key goes from
// SecretStorage to the real server (the fake model sees it on the wire),
// never into the options; Bedrock's region and AWS profile sign the request.
import * as assert from 'node:assert/strict';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { after, afterEach, test } from 'node:test';
import { activate, fakeModel, haveKiln, kilnBin, message, Session, stopFakeModel } from './helpers';
import * as vscode from './stub/vscode';

let s: Session | undefined;
afterEach(async () => { await s?.dispose(); s = undefined; });
after(() => stopFakeModel());
const needKiln = haveKiln() ? {} : { skip: `no kiln server at ${kilnBin} (make build/kiln)` };
const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '../../package.json'), 'utf8'));

// What the fake model received since the last call (the list is cleared).
async function received(url: string): Promise<any[]> {
  const r = await fetch(`${url}/_requests`);
  return (await r.json()) as any[];
}

// The server's environment must not hand it keys from the test's own.
function cleanEnv(extra: Record<string, string> = {}): () => void {
  const names = ['KILN_API_KEY', 'ANTHROPIC_API_KEY', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY',
    'AWS_SESSION_TOKEN', 'AWS_REGION', 'AWS_DEFAULT_REGION', 'AWS_PROFILE', 'AWS_BEARER_TOKEN_BEDROCK',
    'AWS_SHARED_CREDENTIALS_FILE', 'AWS_CONFIG_FILE', ...Object.keys(extra)];
  const saved = new Map(names.map((n) => [n, process.env[n]]));
  for (const n of names) {
    delete process.env[n];
  }
  process.env.AWS_SHARED_CREDENTIALS_FILE = '/nonexistent';
  process.env.AWS_CONFIG_FILE = '/nonexistent';
  Object.assign(process.env, extra);
  return () => {
    for (const [n, v] of saved) {
      if (v === undefined) {
        delete process.env[n];
      } else {
        process.env[n] = v;
      }
    }
  };
}

test('settings: the provider list is the server\'s, with region and AWS profile', () => {
  const props = pkg.contributes.configuration.properties;
  assert.deepEqual(props['kiln.llm.provider'].enum, ['', 'ollama', 'openai', 'anthropic', 'bedrock']);
  assert.ok(props['kiln.llm.region'] && props['kiln.llm.awsProfile'] && props['kiln.serverOptions']);
  assert.equal(props['kiln.serverOptions'].scope, 'machine', 'a workspace cannot loosen kiln');
  assert.ok(pkg.capabilities.untrustedWorkspaces.restrictedConfigurations.includes('kiln.serverOptions'));
});

test('settings: named settings and kiln.serverOptions reach initialize; an apiKey in them is refused', needKiln, async () => {
  const restore = cleanEnv();
  try {
    s = await activate({
      'kiln.llm.provider': 'bedrock', 'kiln.llm.region': 'eu-north-1', 'kiln.llm.model': 'm1',
      'kiln.sandbox.maxConcurrentRuns': 3, 'kiln.sandbox.limits': { wallMs: 4000 },
      'kiln.serverOptions': {
        llm: { temperature: 0.2, model: 'overridden', apiKey: 'sk-leak' },
        intent: { maxRepairAttempts: 2 }, sandbox: { limits: { cpuMs: 9000 }, sessionIdleMs: 60000 },
      },
    });
    const client = await s.kiln.server.ensure();
    assert.deepEqual((client as any).clientOptions.initializationOptions, {
      llm: { temperature: 0.2, model: 'm1', provider: 'bedrock', region: 'eu-north-1' },
      intent: { maxRepairAttempts: 2 },
      sandbox: { limits: { cpuMs: 9000, wallMs: 4000 }, sessionIdleMs: 60000, maxConcurrentRuns: 3 },
    });
    assert.ok(!JSON.stringify((client as any).clientOptions).includes('sk-leak'), 'the key is not sent');
    assert.ok(message(/^warn: kiln: kiln\.serverOptions holds llm\.apiKey: not sent\. .*Kiln: Set API Key/), 'and the person is told');
  } finally {
    restore();
  }
});

test('settings: Anthropic with the key from SecretStorage: the model sees it, settings never hold it', needKiln, async () => {
  const url = await fakeModel();
  const restore = cleanEnv();
  try {
    s = await activate({ 'kiln.llm.provider': 'anthropic', 'kiln.llm.url': url, 'kiln.llm.model': 'fake-coder' });
    vscode.answers.input.push('sk-ant-from-vscode');
    assert.equal(await vscode.commands.executeCommand('kiln.setApiKey'), true);
    await received(url);
    const p = await s.kiln.server.request('intent/run', { intent: 'greet', language: 'python' });
    assert.match(p.code, /hello from kiln/);
    const posts = (await received(url)).filter((r) => r.method === 'POST' && r.path === '/v1/messages');
    assert.equal(posts.length, 1, JSON.stringify(posts));
    assert.equal(posts[0].headers['x-api-key'], 'sk-ant-from-vscode');
    const client = await s.kiln.server.ensure();
    assert.ok(!JSON.stringify((client as any).clientOptions).includes('sk-ant-from-vscode'));
    for (const k of Object.keys(pkg.contributes.configuration.properties)) {
      assert.notEqual(vscode.workspace.getConfiguration().get(k), 'sk-ant-from-vscode', k);
    }
  } finally {
    restore();
  }
});

test('settings: Bedrock signs with kiln.llm.region and the kiln.llm.awsProfile credentials', needKiln, async () => {
  const url = await fakeModel();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-vscode-aws-'));
  const creds = path.join(dir, 'credentials');
  fs.writeFileSync(creds, '[default]\naws_access_key_id = AKIDWRONG\naws_secret_access_key = wrong\n\n' +
    '[kilnprof]\naws_access_key_id = AKIDFAKEKILN\naws_secret_access_key = fake/secret+key\n');
  const restore = cleanEnv();
  process.env.AWS_SHARED_CREDENTIALS_FILE = creds;
  try {
    s = await activate({
      'kiln.llm.provider': 'bedrock', 'kiln.llm.url': url, 'kiln.llm.model': 'fake-coder',
      'kiln.llm.region': 'eu-north-1', 'kiln.llm.awsProfile': 'kilnprof',
    });
    await received(url);
    const p = await s.kiln.server.request('intent/run', { intent: 'greet', language: 'python' });
    assert.match(p.code, /hello from kiln/);
    const posts = (await received(url)).filter((r) => r.method === 'POST' && r.path.startsWith('/model/'));
    assert.equal(posts.length, 1, JSON.stringify(posts));
    assert.match(posts[0].headers.authorization, /^AWS4-HMAC-SHA256 Credential=AKIDFAKEKILN\/\d{8}\/eu-north-1\/bedrock\/aws4_request,/);
    assert.equal(posts[0].sigv4.ok, true);
  } finally {
    restore();
  }
});
