import { describe, expect, it } from 'vitest';

import { findLines, foldLines, matchRanges, nextMatch } from '../src/search';

describe('search', () => {
  const lines = ['FADD R5, R2, R5 ;', 'NOP ;', 'fadd again fadd', ''];
  const folded = foldLines(lines);

  it('finds lines case-insensitively', () => {
    expect(findLines(folded, 'fadd')).toEqual([0, 2]);
    expect(findLines(folded, 'NOP')).toEqual([1]);
    expect(findLines(folded, 'zzz')).toEqual([]);
    expect(findLines(folded, '')).toEqual([]);
  });

  it('gives match ranges within a line', () => {
    expect(matchRanges(lines[2], 'FADD')).toEqual([
      [0, 4],
      [11, 15]
    ]);
    expect(matchRanges('aaaa', 'aa')).toEqual([
      [0, 2],
      [2, 4]
    ]);
    expect(matchRanges('abc', '')).toEqual([]);
  });

  it('steps through matches, wrapping around', () => {
    const m = [3, 10, 20];
    expect(nextMatch([], null)).toBe(-1);
    expect(nextMatch(m, null)).toBe(0);
    expect(nextMatch(m, null, true)).toBe(2);
    expect(nextMatch(m, 3)).toBe(1);
    expect(nextMatch(m, 4)).toBe(1);
    expect(nextMatch(m, 20)).toBe(0);
    expect(nextMatch(m, 10, true)).toBe(0);
    expect(nextMatch(m, 3, true)).toBe(2);
    expect(nextMatch(m, -1)).toBe(0);
  });
});
