import './stub/register';
// hunks.ts alone: edits applied to a snapshot, the line hunks cut from the
// difference (one hunk per change as a person reads it), the proposed text
// with some hunks decided, control characters made visible.
import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyEdits, currentStart, editsFor, hunks, splitLines, visible, withPending } from '../src/hunks';

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

test('currentStart and withPending follow accepted hunks', () => {
  const hs = hunks('a\nb\nc\nd\ne\n', 'a\nB1\nB2\nc\nd\nE\n');
  assert.equal(hs.length, 2);
  hs[0].status = 'accepted';
  assert.equal(currentStart(hs, hs[1]), 5, 'moved down by the accepted hunk');
  assert.equal(withPending('a\nB1\nB2\nc\nd\ne\n', hs), 'a\nB1\nB2\nc\nd\nE\n');
  hs[1].status = 'rejected';
  assert.equal(withPending('a\nB1\nB2\nc\nd\ne\n', hs), 'a\nB1\nB2\nc\nd\ne\n');
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
