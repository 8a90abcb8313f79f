// hunks.ts: a proposal's edit as line hunks. The server's TextEdits are
// applied to the text the request was made for, and a line diff cuts the
// change into hunks that are accepted or rejected one by one, whatever way
// the server cut its edit (as the Neovim plugin does with vim.diff).
// Pure functions of strings: no `vscode` here, so they are tested alone.
import { diffArrays } from 'diff';

export interface LspPosition { line: number; character: number }
export interface LspRange { start: LspPosition; end: LspPosition }
export interface LspTextEdit { range: LspRange; newText: string }

/** A line hunk: old lines [oldStart, oldStart+oldCount) of the snapshot
 * (0-based) become `lines`. An insertion has oldCount 0 and goes before
 * old line oldStart. newStart is the hunk's first line in the proposed
 * text. */
export interface Hunk {
  oldStart: number;
  oldCount: number;
  newStart: number;
  lines: string[];
  oldLines: string[];
  status: 'pending' | 'accepted' | 'rejected';
}

/** Lines of a text; a final newline does not start another line. */
export function splitLines(text: string): string[] {
  const lines = text.split(/\r\n|\r|\n/);
  if (lines.length > 1 && lines[lines.length - 1] === '') {
    lines.pop();
  } else if (text === '') {
    return [];
  }
  return lines;
}

// Offset in text of an LSP position counted in UTF-16 code units (VS
// Code's own unit, and the encoding the client offers kiln).
function offsetAt(text: string, starts: number[], pos: LspPosition): number {
  if (pos.line >= starts.length) {
    return text.length;
  }
  const s = starts[pos.line];
  const e = pos.line + 1 < starts.length ? starts[pos.line + 1] : text.length;
  let lineEnd = e;
  // The character count stops before the line's end of line.
  while (lineEnd > s && (text[lineEnd - 1] === '\n' || text[lineEnd - 1] === '\r')) {
    lineEnd--;
  }
  return Math.min(s + Math.max(0, pos.character), lineEnd);
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\n' || (c === '\r' && text[i + 1] !== '\n')) {
      starts.push(i + 1);
    }
  }
  return starts;
}

/** Apply TextEdits (positions in text, not overlapping) to text. */
export function applyEdits(text: string, edits: LspTextEdit[]): string {
  const starts = lineStarts(text);
  const spans = edits.map((e) => ({
    s: offsetAt(text, starts, e.range.start),
    e: offsetAt(text, starts, e.range.end),
    t: e.newText ?? '',
  }));
  // From the end backwards, so earlier offsets stay valid.
  spans.sort((a, b) => b.s - a.s);
  let out = text;
  for (const sp of spans) {
    out = out.slice(0, sp.s) + sp.t + out.slice(sp.e);
  }
  return out;
}

interface Span { os: number; oc: number; ns: number; nc: number }

// A pure insertion or deletion can often sit one line higher or lower with
// the same effect (around repeated lines such as blanks). Myers's diff
// picks one place; a person reads one change as one hunk. Slide such a
// span up (dir -1) or down (+1) by one line if that is equivalent.
function slide(sp: Span, dir: number, a: string[], b: string[]): boolean {
  if (sp.oc > 0 && sp.nc > 0) {
    return false;
  }
  const side = sp.oc > 0 ? a : b;
  const start = sp.oc > 0 ? sp.os : sp.ns;
  const count = sp.oc > 0 ? sp.oc : sp.nc;
  if (dir < 0) {
    if (sp.os === 0 || sp.ns === 0 || a[sp.os - 1] !== side[start + count - 1]) {
      return false;
    }
  } else if (sp.os + sp.oc >= a.length || sp.ns + sp.nc >= b.length || a[sp.os + sp.oc] !== side[start]) {
    return false;
  }
  sp.os += dir;
  sp.ns += dir;
  return true;
}

// Merge neighbours that a slide makes touch.
function compact(spans: Span[], a: string[], b: string[]): Span[] {
  const out: Span[] = [];
  for (const sp of spans) {
    const prev = out[out.length - 1];
    if (prev) {
      const tryMerge = (mover: Span, dir: number, touches: () => boolean): boolean => {
        const saved = { ...mover };
        while (!touches() && slide(mover, dir, a, b)) { /* keep sliding */ }
        if (touches()) {
          return true;
        }
        Object.assign(mover, saved);
        return false;
      };
      const touch = () => prev.os + prev.oc === sp.os;
      if (touch() || tryMerge(sp, -1, touch) || tryMerge(prev, 1, touch)) {
        prev.oc = sp.os + sp.oc - prev.os;
        prev.nc = sp.ns + sp.nc - prev.ns;
        continue;
      }
    }
    out.push(sp);
  }
  return out;
}

/** The line hunks that turn oldText into newText. */
export function hunks(oldText: string, newText: string): Hunk[] {
  const a = splitLines(oldText);
  const b = splitLines(newText);
  const spans: Span[] = [];
  let ai = 0;
  let bi = 0;
  let cur: Span | null = null;
  for (const p of diffArrays(a, b)) {
    const n = p.count ?? p.value.length;
    if (!p.added && !p.removed) {
      cur = null;
      ai += n;
      bi += n;
      continue;
    }
    if (!cur) {
      cur = { os: ai, oc: 0, ns: bi, nc: 0 };
      spans.push(cur);
    }
    if (p.removed) {
      cur.oc += n;
      ai += n;
    } else {
      cur.nc += n;
      bi += n;
    }
  }
  return compact(spans, a, b).map((sp) => ({
    oldStart: sp.os, oldCount: sp.oc, newStart: sp.ns,
    lines: b.slice(sp.ns, sp.ns + sp.nc), oldLines: a.slice(sp.os, sp.os + sp.oc), status: 'pending' as const,
  }));
}

/** The TextEdits of uri in an LSP WorkspaceEdit (documentChanges or changes). */
export function editsFor(edit: unknown, uri: string): LspTextEdit[] | undefined {
  if (!edit || typeof edit !== 'object') {
    return undefined;
  }
  const e = edit as {
    documentChanges?: { textDocument?: { uri?: string }; edits?: LspTextEdit[] }[];
    changes?: Record<string, LspTextEdit[]>;
  };
  for (const dc of e.documentChanges ?? []) {
    if (dc.edits && (!dc.textDocument || dc.textDocument.uri === uri)) {
      return dc.edits;
    }
  }
  if (e.changes) {
    return e.changes[uri] ?? Object.values(e.changes)[0];
  }
  return undefined;
}

/** Where hunk h starts in the document now, given the hunks accepted
 * before it (each changed the line count by lines - oldCount). */
export function currentStart(all: Hunk[], h: Hunk): number {
  let row = h.oldStart;
  for (const o of all) {
    if (o === h) {
      break;
    }
    if (o.status === 'accepted') {
      row += o.lines.length - o.oldCount;
    }
  }
  return row;
}

/** The document's text with the hunks still pending applied too: the
 * right side of the side-by-side diff. */
export function withPending(current: string, all: Hunk[], eol = '\n'): string {
  const lines = splitLines(current);
  const endsWithEol = current === '' || /\r?\n$|\r$/.test(current);
  let shift = 0;
  for (const h of all) {
    if (h.status !== 'pending') {
      continue;
    }
    const at = currentStart(all, h) + shift;
    lines.splice(at, h.oldCount, ...h.lines);
    shift += h.lines.length - h.oldCount;
  }
  return lines.join(eol) + (endsWithEol && lines.length > 0 ? eol : '');
}

/** Control characters made visible, for text from code, models or
 * programs shown outside an editor buffer (kiln's rule). Newlines and
 * tabs stay as they are. */
export function visible(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g,
    (c) => {
      const cp = c.codePointAt(0) ?? 0;
      if (cp < 0x20) {
        return String.fromCodePoint(0x2400 + cp);
      }
      if (cp === 0x7f) {
        return '\u2421';
      }
      return '<U+' + cp.toString(16).toUpperCase().padStart(4, '0') + '>';
    });
}
