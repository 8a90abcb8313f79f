// webview.ts: what kiln's webviews (the Kiln Output panel, the
// conversation) share: the page with its Content-Security-Policy (no
// frames, no remote anything, images as data: only, one script by nonce),
// the theme's colours through VS Code's CSS variables, and the script
// helpers that show text from programs and models safely: visible()
// makes control and bidi characters visible, renderItem() draws a MIME
// bundle, cleanHtml() keeps only table and text elements of program HTML.
// Everything is put in the page with textContent or createElement, never
// innerHTML of outside text. openPanel() makes either view's panel.
import * as crypto from 'crypto';
import * as vscode from 'vscode';

/** A webview panel beside the editor, without taking focus, showing
 * `html(nonce, cspSource)` with a fresh nonce. `onReady` runs each time
 * the page's script says it listens (so the view sends what it holds
 * again), `onGone` when the person closes the panel. */
export function openPanel(viewType: string, title: string, html: (nonce: string, cspSource: string) => string,
  onReady: () => void, onGone: () => void): vscode.WebviewPanel {
  const panel = vscode.window.createWebviewPanel(viewType, title,
    { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
    { enableScripts: true, localResourceRoots: [], retainContextWhenHidden: true });
  panel.webview.html = html(crypto.randomBytes(16).toString('base64'), panel.webview.cspSource);
  panel.webview.onDidReceiveMessage((m: any) => {
    if (m && m.type === 'ready') {
      onReady();
    }
  });
  panel.onDidDispose(onGone);
  return panel;
}

/** The page: `css` and `script` are the view's own (never outside text). */
export function page(nonce: string, cspSource: string, title: string, css: string, script: string): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data: ${cspSource}; style-src 'unsafe-inline' ${cspSource}; script-src 'nonce-${nonce}'; frame-src 'none'; form-action 'none'; base-uri 'none';">
<title>${title}</title>
<style>
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); background: var(--vscode-editor-background); }
pre { white-space: pre-wrap; word-break: break-word; font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); margin: .2em 0; }
.item { margin: .5em 0; }
.label { opacity: .7; font-size: .85em; margin-bottom: .2em; }
img { max-width: 100%; }
.html { overflow-x: auto; max-height: 70vh; overflow-y: auto; }
.html table { border-collapse: collapse; font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); color: var(--vscode-foreground); background: transparent; }
.html th, .html td { border: 1px solid var(--vscode-panel-border, rgba(128,128,128,.35)); padding: .15em .6em; text-align: right; }
.html thead th, .html tbody th { background: var(--vscode-editorWidget-background, transparent); font-weight: 600; }
.html tbody tr:nth-child(even) td { background: var(--vscode-list-hoverBackground, transparent); }
${css}
</style></head>
<body><div id="main"></div>
<script nonce="${nonce}">
const vscode = acquireVsCodeApi();
function visible(s) {
  return String(s).replace(/[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069]/g,
    c => '<U+' + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0') + '>');
}
function utf8b64(s) { return btoa(unescape(encodeURIComponent(s))); }
// Program HTML (a DataFrame's table): parsed inertly (DOMParser runs no
// script and loads nothing), then rebuilt from these elements only, with
// colspan and rowspan the only attributes; other elements give their
// text; script, style and the like give nothing.
const KEEP = new Set(['TABLE', 'THEAD', 'TBODY', 'TFOOT', 'TR', 'TH', 'TD', 'CAPTION', 'DIV', 'SPAN', 'P', 'BR',
  'B', 'I', 'EM', 'STRONG', 'CODE', 'PRE', 'SUB', 'SUP', 'UL', 'OL', 'LI', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'HR', 'SMALL']);
const DROP = new Set(['SCRIPT', 'STYLE', 'TEMPLATE', 'IFRAME', 'OBJECT', 'EMBED', 'SVG', 'MATH', 'NOSCRIPT', 'HEAD', 'TITLE', 'META', 'LINK', 'IMG', 'VIDEO', 'AUDIO', 'CANVAS', 'FORM', 'INPUT', 'BUTTON', 'TEXTAREA', 'SELECT']);
function cleanInto(src, dst) {
  for (const n of Array.from(src.childNodes)) {
    if (n.nodeType === 3) {
      dst.appendChild(document.createTextNode(visible(n.nodeValue)));
    } else if (n.nodeType === 1) {
      const tag = n.tagName.toUpperCase();
      if (DROP.has(tag)) continue;
      if (KEEP.has(tag)) {
        const el = document.createElement(tag.toLowerCase());
        for (const a of ['colspan', 'rowspan']) {
          const v = n.getAttribute(a);
          if (v && /^[0-9]{1,4}$/.test(v)) el.setAttribute(a, v);
        }
        cleanInto(n, el);
        dst.appendChild(el);
      } else {
        cleanInto(n, dst);
      }
    }
  }
}
function cleanHtml(html) {
  const doc = new DOMParser().parseFromString(String(html), 'text/html');
  const div = document.createElement('div');
  div.className = 'html';
  cleanInto(doc.body, div);
  return div;
}
function renderItem(item) {
  const d = item.data || {};
  const div = document.createElement('div');
  div.className = 'item';
  const t = document.createElement('div');
  t.className = 'label';
  t.textContent = visible(item.title || 'display');
  div.appendChild(t);
  let el;
  const img = ['image/png', 'image/jpeg', 'image/gif'].find(k => typeof d[k] === 'string');
  if (img) {
    el = document.createElement('img');
    el.src = 'data:' + img + ';base64,' + d[img].replace(/[^A-Za-z0-9+/=]/g, '');
    el.alt = visible(d['text/plain'] || item.title || img);
  } else if (typeof d['image/svg+xml'] === 'string') {
    el = document.createElement('img');
    el.src = 'data:image/svg+xml;base64,' + utf8b64(d['image/svg+xml']);
    el.alt = visible(item.title || 'SVG');
  } else if (typeof d['text/html'] === 'string') {
    el = cleanHtml(d['text/html']);
  } else if (d['application/json'] !== undefined) {
    el = document.createElement('pre');
    el.textContent = visible(JSON.stringify(d['application/json'], null, 2));
  } else {
    el = document.createElement('pre');
    el.textContent = visible(d['text/markdown'] || d['text/plain'] || '');
  }
  div.appendChild(el);
  return div;
}
${script}
vscode.postMessage({ type: 'ready' });
</script></body></html>`;
}
