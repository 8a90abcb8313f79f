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

/** Where a hunk under inline review sits in the document: from row, its
 * old lines (red, kept until Accept) then its proposed lines (green,
 * written into the document until Reject). An accepted hunk keeps only
 * green lines, a rejected one only red. */
export interface Block { row: number; red: number; green: number }

/** A change to the document as lines: the lines [start, end) were replaced
 * by `count` lines. A change inside one line is start = that line, end =
 * start + 1, count = its newlines + 1; a pure insertion has start = end. */
export interface LineChange { start: number; end: number; count: number }

/** A text change (VS Code's contentChanges entry, positions before it) as
 * a LineChange. */
export function lineChange(sl: number, sc: number, el: number, ec: number, text: string): LineChange {
  const k = (text.match(/\r\n|\r|\n/g) ?? []).length;
  if (sc === 0 && ec === 0 && (text === '' || /(\r\n|\r|\n)$/.test(text))) {
    return { start: sl, end: el, count: k };
  }
  return { start: sl, end: el + 1, count: k + 1 };
}

/** Move the blocks for a change the review did not make; `pending` says
 * which blocks are still under review. Returns false when the change
 * crosses the edge of a pending block's red or green part (what it holds
 * can no longer be told apart). A change inside the green part is the
 * person editing the proposed lines: they stay proposed, Accept keeps
 * them as edited, Reject takes them away. Changes are given one at a
 * time in descending order of position (as VS Code lists them). */
export function track(blocks: Block[], pending: boolean[], c: LineChange): boolean {
  const delta = c.count - (c.end - c.start);
  let ok = true;
  blocks.forEach((b, i) => {
    const z = b.red + b.green;
    const g0 = b.row + b.red;
    if (c.start === c.end) {
      // A pure insertion before line c.start.
      if (c.start <= b.row) {
        b.row += delta;
      } else if (c.start < g0) {
        b.red += delta;
      } else if (c.start < b.row + z) {
        b.green += delta;
      }
      return;
    }
    if (c.end <= b.row) {
      b.row += delta;
    } else if (c.start >= b.row + z) {
      // After the block: nothing moves.
    } else if (c.start >= g0 && c.end <= g0 + b.green) {
      b.green = Math.max(0, b.green + delta);
    } else if (c.start >= b.row && c.end <= g0) {
      b.red = Math.max(0, b.red + delta);
    } else if (pending[i]) {
      ok = false;
    } else {
      // A decided hunk's lines edited across: its lines are the person's
      // now; keep its place roughly right for the hunks after it.
      const nz = Math.max(0, z + delta);
      if (b.green > 0) {
        b.green = nz;
        b.red = 0;
      } else {
        b.red = nz;
      }
      b.row = Math.min(b.row, c.start);
    }
  });
  return ok;
}

/** The line range a text takes from line `start` to line `end` (exclusive),
 * as an LSP-ish [start line, start char, end line, end char], so that
 * removing it removes exactly those lines with their ends of line. The
 * last line of a text without a final newline takes the newline before
 * it instead. `lines` is the text's splitLines, `finalEol` whether it
 * ends with a newline (or is empty). */
export function linesSpan(lines: string[], finalEol: boolean, start: number, end: number): [number, number, number, number] {
  if (end < lines.length || finalEol) {
    return [start, 0, end, 0];
  }
  if (start > 0) {
    return [start - 1, lines[start - 1].length, end - 1, lines[end - 1].length];
  }
  return [0, 0, end - 1, lines[end - 1]?.length ?? 0];
}

/** Where and what to insert so that `add` become lines of the text before
 * its line `at`: [line, char, text]. */
export function insertLines(lines: string[], finalEol: boolean, at: number, add: string[], eol: string): [number, number, string] {
  if (at < lines.length || finalEol) {
    return [at, 0, add.map((l) => l + eol).join('')];
  }
  const last = lines.length - 1;
  return [last, lines[last].length, eol + add.join(eol)];
}
