import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

import { ALL_PANES, ALL_PANES_PX, FIRST_PANES, firstHidden } from '../src/layout';

describe('first view', () => {
  it('mirrors gpulab/display/layout.py', () => {
    const py = readFileSync(resolve(__dirname, '../../gpulab/display/layout.py'), 'utf8');
    const tuple = (name: string): string[] => {
      const m = py.match(new RegExp(`^${name} = \\(([^)]*)\\)`, 'm'));
      return Array.from((m?.[1] ?? '').matchAll(/"(\w+)"/g), x => x[1]);
    };
    expect(tuple('ALL_PANES')).toEqual([...ALL_PANES]);
    expect(tuple('FIRST_PANES')).toEqual([...FIRST_PANES]);
    expect(Number(py.match(/^ALL_PANES_PX = (\d+)/m)?.[1])).toBe(ALL_PANES_PX);
  });

  it('shows Python and SASS in a narrow view, every pane in a wide one or a chosen set', () => {
    const all = ['python', 'cuda', 'ptx', 'sass'];
    expect(firstHidden(all, 900)).toEqual(['cuda', 'ptx']);
    expect(firstHidden(all, ALL_PANES_PX)).toEqual([]);
    expect(firstHidden(all, 0)).toEqual([]); // not laid out yet
    expect(firstHidden(['python', 'ptx', 'sass'], 900)).toEqual([]); // --show python,ptx,sass
  });
});
