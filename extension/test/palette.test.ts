import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

import { PALETTE, colourOf } from '../src/palette';

describe('palette', () => {
  it('mirrors gpulab/display/palette.py', () => {
    const py = readFileSync(resolve(__dirname, '../../gpulab/display/palette.py'), 'utf8');
    const block = py.slice(py.indexOf('PALETTE = ('), py.indexOf(')', py.indexOf('PALETTE = (')));
    const colours = Array.from(block.matchAll(/"(#[0-9a-fA-F]{8})"/g), m => m[1]);
    expect(colours.length).toBeGreaterThan(0);
    expect([...PALETTE]).toEqual(colours);
  });

  it('takes colour N of the palette for Python line N, wrapping like Python', () => {
    expect(colourOf(1)).toBe(PALETTE[0]);
    expect(colourOf(2)).toBe(PALETTE[1]);
    expect(colourOf(PALETTE.length)).toBe(PALETTE[PALETTE.length - 1]);
    expect(colourOf(PALETTE.length + 1)).toBe(PALETTE[0]);
    // (0 - 1) % 12 == 11 in Python.
    expect(colourOf(0)).toBe(PALETTE[PALETTE.length - 1]);
  });
});
