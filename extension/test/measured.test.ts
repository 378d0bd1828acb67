import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

import { COLOURS, measuredView } from '../src/measured';

const bundle = JSON.parse(readFileSync(resolve(__dirname, 'golden-measured-bundle.json'), 'utf8'));

describe('measured', () => {
  it('mirrors the colours of gpulab/display/measured.py', () => {
    const py = readFileSync(resolve(__dirname, '../../gpulab/display/measured.py'), 'utf8');
    const block = py.slice(py.indexOf('COLOURS = {'), py.indexOf('}', py.indexOf('COLOURS = {')));
    const colours = Object.fromEntries(Array.from(block.matchAll(/"(\w+)": "(#[0-9a-f]{6})"/g), m => [m[1], m[2]]));
    expect(Object.keys(colours).length).toBeGreaterThan(10);
    expect(COLOURS).toEqual(colours);
  });

  it('draws a bar per measured Python line of a recorded profile, the widest at the line with the most', () => {
    const view = measuredView(bundle.measured, bundle.header.measured);
    const rows = bundle.measured.python.filter((r: { samples: number }) => r.samples > 0);
    expect(view.python.size).toBe(rows.length);
    const top = rows.reduce((a: { samples: number }, b: { samples: number }) => (b.samples > a.samples ? b : a));
    const row = Number(top.key.slice(3)) - 1;
    expect(view.python.get(row)?.width).toBe(100);
    const bar = view.python.get(row)!;
    const [reason] = bar.segments[0];
    const label = bundle.measured.reasons.find((r: { id: string }) => r.id === reason).label;
    expect(bar.title).toContain(`top: ${label}`);
    expect(bar.segments.reduce((sum, [, n]) => sum + n, 0)).toBe(top.samples);
  });

  it('takes the verdict and the launches from the header model', () => {
    const view = measuredView(bundle.measured, bundle.header.measured);
    expect(view.verdict).toBe(bundle.header.measured.verdict);
    expect(view.device).toContain('H100');
    expect(view.kernels.length).toBe(bundle.measured.kernels.length);
    expect(view.sass.size).toBe(Object.keys(bundle.measured.sass).length);
  });

  it('reads a bundle without a measured section as nothing to draw, and unknown reasons as misc', () => {
    const empty = measuredView(undefined, undefined);
    expect(empty.python.size + empty.sass.size + empty.legend.length).toBe(0);
    expect(empty.verdict).toBe('');
    const odd = measuredView(
      { python: [{ line: 1, samples: 4, reasons: { 'x" onload="': 4 } }], total: { samples: 4 } },
      { verdict: 'v' }
    );
    expect(odd.python.get(0)?.segments).toEqual([['misc', 4]]);
  });
});
