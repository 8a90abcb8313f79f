// display.ts: rich output in a webview panel. `run/display` MIME bundles
// (images, HTML tables, SVG, JSON, Markdown, text, as Jupyter's
// display_data) and image or text artifacts are posted to the panel, which
// renders the richest form it knows. HTML from a program is shown in a
// sandboxed iframe with scripts off; images only as data: URLs; the
// panel's own script runs under a nonce, nothing else.
import * as crypto from 'crypto';
import * as vscode from 'vscode';

export interface DisplayItem {
  runId?: string;
  /** A MIME bundle: type → string (base64 for binary image types). */
  data: Record<string, unknown>;
  metadata?: unknown;
  /** Where it came from: "display" or an artifact's name. */
  title?: string;
}

// Kept per panel, so a panel opened (or reloaded) late shows them all.
const MAX_ITEMS = 200;

export class DisplayPanel {
  private panel: vscode.WebviewPanel | undefined;
  readonly items: DisplayItem[] = [];
  /** Every message posted to the webview, in order (tests read it). */
  readonly posted: unknown[] = [];

  clear(header: string): void {
    this.items.length = 0;
    this.post({ type: 'reset', header, items: [] });
  }

  add(item: DisplayItem): void {
    this.items.push(item);
    if (this.items.length > MAX_ITEMS) {
      this.items.shift();
    }
    this.ensure();
    this.post({ type: 'display', item });
  }

  private post(msg: unknown): void {
    if (!this.panel) {
      return;
    }
    this.posted.push(msg);
    void this.panel.webview.postMessage(msg);
  }

  private ensure(): void {
    if (this.panel) {
      this.panel.reveal(vscode.ViewColumn.Beside, true);
      return;
    }
    const panel = vscode.window.createWebviewPanel('kiln.display', 'Kiln Output',
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, localResourceRoots: [], retainContextWhenHidden: true });
    this.panel = panel;
    panel.webview.html = html(crypto.randomBytes(16).toString('base64'), panel.webview.cspSource);
    // The webview says when its script listens; everything so far is sent again then.
    panel.webview.onDidReceiveMessage((m: any) => {
      if (m && m.type === 'ready') {
        this.post({ type: 'reset', header: '', items: this.items });
      }
    });
    panel.onDidDispose(() => { this.panel = undefined; });
  }

  dispose(): void {
    this.panel?.dispose();
  }
}

/** The panel's page. Exported for tests, which check its policy. */
export function html(nonce: string, cspSource: string): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data: ${cspSource}; style-src 'unsafe-inline' ${cspSource}; script-src 'nonce-${nonce}'; frame-src 'self';">
<style>
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); }
.item { margin: 0.6em 0; border-bottom: 1px solid var(--vscode-panel-border); padding-bottom: 0.6em; }
.title { opacity: 0.7; font-size: 0.9em; }
pre { white-space: pre-wrap; font-family: var(--vscode-editor-font-family); }
img { max-width: 100%; background: white; }
iframe { width: 100%; border: 0; background: white; min-height: 4em; }
</style></head>
<body><div id="header" class="title"></div><div id="items"></div>
<script nonce="${nonce}">
const vscode = acquireVsCodeApi();
const items = document.getElementById('items');
function visible(s) {
  return String(s).replace(/[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069]/g,
    c => '<U+' + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0') + '>');
}
function utf8b64(s) { return btoa(unescape(encodeURIComponent(s))); }
function render(item) {
  const d = item.data || {};
  const div = document.createElement('div');
  div.className = 'item';
  const t = document.createElement('div');
  t.className = 'title';
  t.textContent = (item.title || 'display') + (item.runId ? ' (' + item.runId + ')' : '');
  div.appendChild(t);
  let el;
  if (typeof d['image/png'] === 'string' || typeof d['image/jpeg'] === 'string' || typeof d['image/gif'] === 'string') {
    const type = ['image/png', 'image/jpeg', 'image/gif'].find(k => typeof d[k] === 'string');
    el = document.createElement('img');
    el.src = 'data:' + type + ';base64,' + d[type].replace(/\\s/g, '');
    el.alt = String(d['text/plain'] || type);
  } else if (typeof d['image/svg+xml'] === 'string') {
    el = document.createElement('img');
    el.src = 'data:image/svg+xml;base64,' + utf8b64(d['image/svg+xml']);
  } else if (typeof d['text/html'] === 'string') {
    el = document.createElement('iframe');
    el.setAttribute('sandbox', '');
    el.srcdoc = d['text/html'];
  } else if (d['application/json'] !== undefined) {
    el = document.createElement('pre');
    el.textContent = JSON.stringify(d['application/json'], null, 2);
  } else {
    el = document.createElement('pre');
    el.textContent = visible(d['text/markdown'] || d['text/plain'] || '');
  }
  div.appendChild(el);
  items.appendChild(div);
  div.scrollIntoView();
}
window.addEventListener('message', e => {
  const m = e.data;
  if (m.type === 'reset') {
    items.textContent = '';
    if (m.header) document.getElementById('header').textContent = m.header;
    for (const it of m.items) render(it);
  } else if (m.type === 'display') {
    render(m.item);
  }
});
vscode.postMessage({ type: 'ready' });
</script></body></html>`;
}
