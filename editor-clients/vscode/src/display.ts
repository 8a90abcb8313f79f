// display.ts: the Kiln Output panel, a webview that keeps each run as a
// section: the run's code's first line, its output, its rich output
// (`run/display` MIME bundles and image or text artifacts, rendered in
// the richest form the page knows) and its result; newest at the bottom,
// the last MAX_SECTIONS kept. HTML from a program (a DataFrame's table)
// is parsed, cut down to table and text elements without attributes
// other than colspan and rowspan, and drawn in the theme's colours; images
// only as data: URLs; the page's own script runs under a nonce, nothing
// else (webview.ts).
import * as vscode from 'vscode';
import { openPanel, page } from './webview';

export interface DisplayItem {
  runId?: string;
  /** A MIME bundle: type → string (base64 for binary image types). */
  data: Record<string, unknown>;
  metadata?: unknown;
  /** A person's label: "table 1", "figure 2", or a file's name. */
  title?: string;
}

/** One run in the panel. */
export interface Section {
  id: number;
  /** "cell.py: x = 41" (the file and its code's first line). */
  title: string;
  output: string;
  items: DisplayItem[];
  /** "exit 0, 12 ms"; undefined while it runs. */
  result?: string;
  failed?: boolean;
}

// Runs kept, displays per run, output text per run (the rest is cut with
// a note: the output channel and kiln's run folder have all of it).
export const MAX_SECTIONS = 20;
const MAX_ITEMS = 50;
const MAX_OUTPUT = 64 * 1024;

/** A person's label for a display: its kind and its number in the run. */
export function labelOf(data: Record<string, unknown>, items: DisplayItem[]): string {
  const kind = kindOf(data);
  const n = items.filter((i) => kindOf(i.data) === kind).length + 1;
  return `${kind} ${n}`;
}

function kindOf(d: Record<string, unknown>): string {
  if (['image/png', 'image/jpeg', 'image/gif', 'image/svg+xml'].some((k) => typeof d[k] === 'string')) {
    return 'figure';
  }
  if (typeof d['text/html'] === 'string') {
    return /<table/i.test(d['text/html'] as string) ? 'table' : 'HTML';
  }
  if (d['application/json'] !== undefined) {
    return 'JSON';
  }
  return 'value';
}

export class DisplayPanel {
  private panel: vscode.WebviewPanel | undefined;
  readonly sections: Section[] = [];
  private seq = 0;
  /** Every message posted to the webview, in order (tests read it). */
  readonly posted: unknown[] = [];

  private get current(): Section | undefined {
    return this.sections[this.sections.length - 1];
  }

  /** A new run: a section at the bottom; the oldest goes past the cap. */
  begin(title: string): void {
    const section: Section = { id: ++this.seq, title, output: '', items: [] };
    this.sections.push(section);
    if (this.sections.length > MAX_SECTIONS) {
      this.sections.shift();
    }
    this.post({ type: 'section', section });
  }

  /** Output text of the current run (already made visible). */
  output(text: string): void {
    const s = this.current;
    if (!s || !text || s.output.length >= MAX_OUTPUT) {
      return;
    }
    let add = text;
    if (s.output.length + add.length > MAX_OUTPUT) {
      add = add.slice(0, MAX_OUTPUT - s.output.length) +
        `\n[the panel keeps ${MAX_OUTPUT / 1024} KiB of a run's output; the Kiln output channel has the rest]\n`;
    }
    s.output += add;
    this.post({ type: 'output', id: s.id, text: add });
  }

  add(item: DisplayItem): void {
    let s = this.current;
    if (!s) {
      this.begin('output');
      s = this.current!;
    }
    if (s.items.length >= MAX_ITEMS) {
      return;
    }
    const labelled = { ...item, title: item.title && item.title !== 'display' ? item.title : labelOf(item.data, s.items) };
    s.items.push(labelled);
    this.ensure();
    this.post({ type: 'display', id: s.id, item: labelled });
  }

  /** The run ended: its summary under its section. */
  end(result: string, failed = false): void {
    const s = this.current;
    if (!s || s.result !== undefined) {
      return;
    }
    s.result = result;
    s.failed = failed;
    this.post({ type: 'end', id: s.id, result, failed });
  }

  /** Kiln: Show Output Panel. */
  show(): void {
    this.ensure();
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
    // The webview says when its script listens; everything so far is sent again then.
    this.panel = openPanel('kiln.display', 'Kiln Output', html,
      () => this.post({ type: 'reset', sections: this.sections }), () => { this.panel = undefined; });
  }

  dispose(): void {
    this.panel?.dispose();
  }
}

/** The panel's page. Exported for tests, which check its policy. */
export function html(nonce: string, cspSource: string): string {
  return page(nonce, cspSource, 'Kiln Output', `
.section { margin: 0 0 1.2em 0; border-top: 1px solid var(--vscode-panel-border, rgba(128,128,128,.35)); padding-top: .5em; }
.section > h2 { font-size: 1em; font-weight: 600; margin: 0 0 .4em 0; font-family: var(--vscode-editor-font-family); }
.result { opacity: .75; font-size: .9em; }
.result.failed { color: var(--vscode-errorForeground); opacity: 1; }
`, `
const sections = document.getElementById('main');
function sectionEl(id) { return document.querySelector('.section[data-id="' + id + '"]'); }
function addSection(s) {
  const el = document.createElement('section');
  el.className = 'section';
  el.dataset.id = String(s.id);
  const h = document.createElement('h2');
  h.textContent = visible(s.title);
  el.appendChild(h);
  const out = document.createElement('pre');
  out.className = 'output';
  out.textContent = visible(s.output || '');
  if (!s.output) out.hidden = true;
  el.appendChild(out);
  const items = document.createElement('div');
  items.className = 'items';
  el.appendChild(items);
  const res = document.createElement('div');
  res.className = 'result';
  el.appendChild(res);
  sections.appendChild(el);
  for (const it of s.items || []) items.appendChild(renderItem(it));
  if (s.result !== undefined) setResult(el, s.result, s.failed);
  // The oldest go past the cap, as the extension's list does.
  while (sections.children.length > ${MAX_SECTIONS}) sections.removeChild(sections.firstChild);
  el.scrollIntoView({ block: 'end' });
}
function setResult(el, text, failed) {
  const res = el.querySelector('.result');
  res.textContent = '[' + visible(text) + ']';
  res.classList.toggle('failed', !!failed);
}
window.addEventListener('message', e => {
  const m = e.data;
  if (m.type === 'reset') {
    sections.textContent = '';
    for (const s of m.sections) addSection(s);
  } else if (m.type === 'section') {
    addSection(m.section);
  } else {
    const el = sectionEl(m.id);
    if (!el) return;
    if (m.type === 'output') {
      const out = el.querySelector('.output');
      out.hidden = false;
      out.textContent += visible(m.text);
    } else if (m.type === 'display') {
      el.querySelector('.items').appendChild(renderItem(m.item));
    } else if (m.type === 'end') {
      setResult(el, m.result, m.failed);
    }
    el.scrollIntoView({ block: 'end' });
  }
});
`);
}
