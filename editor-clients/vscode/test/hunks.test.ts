import './stub/register';
// hunks.ts alone: edits applied to a snapshot, the line hunks cut from the
// difference (one hunk per change as a person reads it), where an inline
// review's hunks go when the person edits around and inside them, control
// characters made visible.
import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyEdits, editsFor, hunks, insertLines, lineChange, linesSpan, splitLines, track, visible } from '../src/hunks';

const r = (sl: number, sc: number, el: number, ec: number) => ({ start: { line: sl, character: sc }, end: { line: el, character: ec } });

test('applyEdits: insertions, replacements, several edits, UTF-16 columns', () => {
  assert.equal(applyEdits('a\nb\n', [{ range: r(1, 0, 1, 0), newText: 'x\n' }]), 'a\nx\nb\n');
  assert.equal(applyEdits('a\nb\nc\n', [{ range: r(0, 0, 1, 0), newText: 'A\n' }, { range: r(2, 0, 3, 0), newText: 'C\n' }]), 'A\nb\nC\n');
  // An emoji is two UTF-16 units: character 3 is after it.
  assert.equal(applyEdits('x😀y\n', [{ range: r(0, 3, 0, 4), newText: 'Z' }]), 'x😀Z\n');
  // A character past the line's end stops at the end of line.
  assert.equal(applyEdits('ab\ncd\n', [{ range: r(0, 99, 0, 99), newText: '!' }]), 'ab!\ncd\n');
  // A line past the end appends.
  assert.equal(applyEdits('a', [{ range: r(5, 0, 5, 0), newText: '\nb' }]), 'a\nb');
  assert.equal(applyEdits('a\r\nb\r\n', [{ range: r(1, 0, 1, 1), newText: 'B' }]), 'a\r\nB\r\n');
});

test('hunks: one hunk per change, insertions and deletions', () => {
  assert.deepEqual(hunks('a\nb\nc\n', 'a\nB\nc\n').map((h) => [h.oldStart, h.oldCount, h.lines]), [[1, 1, ['B']]]);
  assert.deepEqual(hunks('a\nc\n', 'a\nb\nc\n').map((h) => [h.oldStart, h.oldCount, h.lines]), [[1, 0, ['b']]]);
  assert.deepEqual(hunks('a\nb\nc\n', 'a\nc\n').map((h) => [h.oldStart, h.oldCount, h.lines]), [[1, 1, []]]);
  assert.deepEqual(hunks('', 'x\n').map((h) => [h.oldStart, h.oldCount, h.lines]), [[0, 0, ['x']]]);
  assert.deepEqual(hunks('same\n', 'same\n'), []);
});

test('hunks: a change among repeated blank lines stays one hunk', () => {
  // Myers alone cuts this into a deletion of "# two" and an insertion of a
  // blank two lines further down.
  const old = ['x', '', '# two', '', 'y'].join('\n') + '\n';
  const neu = ['x', '', '', '', 'y'].join('\n') + '\n';
  const hs = hunks(old, neu);
  assert.equal(hs.length, 1, JSON.stringify(hs));
  assert.deepEqual(hs[0].oldLines, ['# two']);
  assert.deepEqual(hs[0].lines, ['']);
});

test('track: blocks follow the person\'s edits; an edit across a hunk\'s edge is refused', () => {
  const mk = () => [{ row: 2, red: 1, green: 2 }, { row: 8, red: 0, green: 1 }];
  // Two lines typed above both hunks move them down.
  let bs = mk();
  assert.equal(track(bs, [true, true], lineChange(0, 0, 0, 0, 'a\nb\n')), true);
  assert.deepEqual(bs, [{ row: 4, red: 1, green: 2 }, { row: 10, red: 0, green: 1 }]);
  // A word changed inside a proposed line: the block keeps its size.
  bs = mk();
  assert.equal(track(bs, [true, true], lineChange(3, 4, 3, 7, 'xyz')), true);
  assert.deepEqual(bs, mk());
  // A line added inside the green part grows it; the next hunk moves.
  bs = mk();
  assert.equal(track(bs, [true, true], lineChange(4, 0, 4, 0, 'more\n')), true);
  assert.deepEqual(bs, [{ row: 2, red: 1, green: 3 }, { row: 9, red: 0, green: 1 }]);
  // The proposed lines deleted whole (an undo of the review's write).
  bs = mk();
  assert.equal(track(bs, [true, true], lineChange(3, 0, 5, 0, '')), true);
  assert.deepEqual(bs[0], { row: 2, red: 1, green: 0 });
  // From the red line into the green ones: refused for a pending hunk.
  bs = mk();
  assert.equal(track(bs, [true, true], lineChange(2, 3, 3, 2, '')), false);
  assert.equal(track(mk(), [false, true], lineChange(2, 3, 3, 2, '')), true, 'a decided hunk may be edited across');
});

test('linesSpan and insertLines: whole lines, and the last line without a newline', () => {
  assert.deepEqual(linesSpan(['a', 'b', 'c'], true, 1, 2), [1, 0, 2, 0]);
  assert.deepEqual(linesSpan(['a', 'b', 'c'], false, 1, 3), [0, 1, 2, 1]);
  assert.deepEqual(linesSpan(['a'], false, 0, 1), [0, 0, 0, 1]);
  assert.deepEqual(insertLines(['a', 'b'], true, 1, ['x', 'y'], '\n'), [1, 0, 'x\ny\n']);
  assert.deepEqual(insertLines(['a', 'b'], false, 2, ['x'], '\n'), [1, 1, '\nx']);
  assert.deepEqual(insertLines([], true, 0, ['x'], '\r\n'), [0, 0, 'x\r\n']);
});

test('editsFor: documentChanges for the uri, or changes', () => {
  const e = [{ range: r(0, 0, 0, 0), newText: 'x' }];
  assert.deepEqual(editsFor({ documentChanges: [{ textDocument: { uri: 'file:///a' }, edits: e }] }, 'file:///a'), e);
  assert.equal(editsFor({ documentChanges: [{ textDocument: { uri: 'file:///b' }, edits: e }] }, 'file:///a'), undefined);
  assert.deepEqual(editsFor({ changes: { 'file:///a': e } }, 'file:///a'), e);
  assert.equal(editsFor(null, 'x'), undefined);
});

test('splitLines and visible', () => {
  assert.deepEqual(splitLines('a\nb\n'), ['a', 'b']);
  assert.deepEqual(splitLines('a\r\nb'), ['a', 'b']);
  assert.deepEqual(splitLines(''), []);
  assert.equal(visible('a\x1b[2J\tb\n\u202ec'), 'a\u241b[2J\tb\n<U+202E>c');
});
