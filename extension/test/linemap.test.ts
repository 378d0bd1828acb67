import { describe, expect, it } from 'vitest';

import {
  LineMap,
  colourForKeys,
  firstPyLine,
  lowerBound,
  pyLineOfKey,
  scrollTarget,
  splitLines
} from '../src/linemap';
import { PALETTE } from '../src/palette';
import { exampleBundle } from './fixtures';

const obj = (m: ReadonlyMap<string, readonly number[]>): Record<string, number[]> =>
  Object.fromEntries(Array.from(m, ([k, v]) => [k, [...v]]));

describe('splitLines', () => {
  it('splits like str.splitlines for \\n and \\r\\n', () => {
    expect(splitLines('')).toEqual([]);
    expect(splitLines('a')).toEqual(['a']);
    expect(splitLines('a\n')).toEqual(['a']);
    expect(splitLines('a\n\n')).toEqual(['a', '']);
    expect(splitLines('a\nb')).toEqual(['a', 'b']);
    expect(splitLines('a\r\nb\r\n')).toEqual(['a', 'b']);
    expect(splitLines('\n')).toEqual(['']);
  });
});

describe('keys', () => {
  it('parses py:N keys only', () => {
    expect(pyLineOfKey('py:12')).toBe(12);
    expect(pyLineOfKey('cu:12')).toBeNull();
    expect(pyLineOfKey('py:')).toBeNull();
    expect(pyLineOfKey('py:x')).toBeNull();
    expect(firstPyLine(['cu:3', 'py:4', 'py:5'])).toBe(4);
    expect(firstPyLine(['cu:3'])).toBeNull();
  });

  it('colours by the first py:N key', () => {
    expect(colourForKeys(['cu:42', 'py:2', 'py:1'])).toBe(PALETTE[1]);
    expect(colourForKeys(['cu:42'])).toBeNull();
    expect(colourForKeys([])).toBeNull();
  });
});

describe('LineMap on the docs/bundle.md example', () => {
  const map = new LineMap(exampleBundle().links);

  it('gives the keys of each line', () => {
    expect(map.keysOf('ptx', 57)).toEqual(['py:2', 'cu:42']);
    expect(map.keysOf('ptx', 56)).toEqual([]);
    expect(map.keysOf('nope', 0)).toEqual([]);
    expect(map.panes.sort()).toEqual(['cuda', 'ptx', 'python', 'sass']);
  });

  it('indexes lines by key', () => {
    expect(obj(map.linesOfKey('py:2'))).toEqual({ python: [1], ptx: [57], sass: [12] });
    expect(obj(map.linesOfKey('cu:42'))).toEqual({ cuda: [41], ptx: [57], sass: [12] });
    expect(obj(map.linesOfKey('cu:40'))).toEqual({ sass: [13] });
    expect(obj(map.linesOfKey('py:99'))).toEqual({});
  });

  it('colours lines by their first py:N key', () => {
    expect(map.colourOf('python', 0)).toBe(PALETTE[0]);
    expect(map.colourOf('python', 1)).toBe(PALETTE[1]);
    expect(map.colourOf('ptx', 57)).toBe(PALETTE[1]);
    expect(map.colourOf('sass', 12)).toBe(PALETTE[1]);
    expect(map.colourOf('sass', 13)).toBeNull(); // cu:40 only
    expect(map.colourOf('cuda', 41)).toBeNull(); // cu:42 only
    expect(map.colourOf('sass', 0)).toBeNull(); // no source line
    expect(map.pyLineOf('ptx', 57)).toBe(2);
  });

  it('finds counterparts in the other panes', () => {
    expect(obj(map.counterparts('python', 1))).toEqual({ ptx: [57], sass: [12] });
    expect(obj(map.counterparts('sass', 12))).toEqual({ python: [1], cuda: [41], ptx: [57] });
    expect(obj(map.counterparts('cuda', 41))).toEqual({ ptx: [57], sass: [12] });
    expect(obj(map.counterparts('sass', 13))).toEqual({});
    expect(obj(map.counterparts('python', 0))).toEqual({});
    expect(obj(map.counterparts('sass', 5))).toEqual({});
  });

  it('lists linked lines of a pane', () => {
    expect(map.linkedLines('sass')).toEqual([12, 13]);
    expect(map.linkedLines('missing')).toEqual([]);
  });
});

describe('LineMap edge cases', () => {
  it('merges lines of several keys, deduplicated and sorted', () => {
    const map = new LineMap({
      python: { '2': ['py:3'], '3': ['py:4'] },
      sass: {
        '40': ['py:4'],
        '7': ['py:3'],
        '9': ['py:3', 'py:4', 'py:3'],
        '10': ['py:4']
      }
    });
    expect(map.keysOf('sass', 9)).toEqual(['py:3', 'py:4']);
    expect(obj(map.linesOfKey('py:3'))).toEqual({ python: [2], sass: [7, 9] });
    expect(obj(map.counterparts('sass', 9))).toEqual({ python: [2, 3] });
    expect(obj(map.counterparts('sass', 9, true))).toEqual({ python: [2, 3], sass: [7, 10, 40] });
    expect(obj(map.counterparts('python', 3))).toEqual({ sass: [9, 10, 40] });
  });

  it('ignores malformed entries', () => {
    const links = {
      python: { '0': ['py:1'], x: ['py:1'], '-1': ['py:1'], '2': [], '3': [7, 'py:4'] },
      broken: null,
      other: 'nope'
    } as unknown as ConstructorParameters<typeof LineMap>[0];
    const map = new LineMap(links);
    expect(map.linkedLines('python')).toEqual([0, 3]);
    expect(map.keysOf('python', 3)).toEqual(['py:4']);
    expect(new LineMap(null).keys).toEqual([]);
    expect(new LineMap(undefined).counterparts('python', 0).size).toBe(0);
  });

  it('builds the index for tens of thousands of SASS lines quickly', () => {
    const sass: Record<string, string[]> = {};
    const python: Record<string, string[]> = {};
    for (let i = 0; i < 60; i++) {
      python[String(i)] = [`py:${i + 1}`];
    }
    for (let i = 0; i < 50000; i++) {
      sass[String(i)] = [`py:${(i % 60) + 1}`, `cu:${(i % 300) + 1}`];
    }
    const t0 = performance.now();
    const map = new LineMap({ python, sass });
    const cps = map.counterparts('python', 0);
    const t1 = performance.now();
    expect(cps.get('sass')?.length).toBe(Math.ceil(50000 / 60));
    expect(map.colourOf('sass', 61)).toBe(PALETTE[1]);
    expect(t1 - t0).toBeLessThan(2000);
  });
});

describe('scrolling helpers', () => {
  it('lowerBound', () => {
    expect(lowerBound([], 3)).toBe(0);
    expect(lowerBound([1, 3, 5], 0)).toBe(0);
    expect(lowerBound([1, 3, 5], 3)).toBe(1);
    expect(lowerBound([1, 3, 5], 4)).toBe(2);
    expect(lowerBound([1, 3, 5], 6)).toBe(3);
  });

  it('scrollTarget keeps a visible counterpart, else goes down, else up', () => {
    expect(scrollTarget([], 0, 10)).toBeNull();
    expect(scrollTarget([5, 50], 0, 10)).toBeNull();
    expect(scrollTarget([20, 50], 0, 10)).toBe(20);
    expect(scrollTarget([2, 50], 10, 20)).toBe(50);
    expect(scrollTarget([2, 5], 10, 20)).toBe(5);
  });
});
