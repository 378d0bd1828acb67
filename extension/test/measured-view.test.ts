// @vitest-environment jsdom
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { BuildView } from '../src/view';

const golden = JSON.parse(readFileSync(resolve(__dirname, 'golden-measured-bundle.json'), 'utf8'));

let view: BuildView;

beforeEach(() => {
  view = new BuildView(document);
  document.body.appendChild(view.node);
});

afterEach(() => {
  view.dispose();
  view.node.remove();
});

const q = (sel: string): HTMLElement | null => view.node.querySelector(sel);
const qa = (sel: string): HTMLElement[] => Array.from(view.node.querySelectorAll(sel));

describe('the measured column in the view', () => {
  it('draws a bar of stall samples by reason beside each measured Python line, the widest at the verdict line', () => {
    view.render(golden);
    const rows = golden.measured.python.filter((r: { samples: number }) => r.samples > 0);
    expect(qa('.gpulab-pane[data-pane="python"] .gpulab-measured[title]').length).toBe(rows.length);
    const row = Number(golden.measured.verdict_key.slice(3)) - 1;
    const cell = q(`.gpulab-pane[data-pane="python"] .gpulab-line[data-line="${row}"] .gpulab-measured`)!;
    expect((cell.querySelector('.gpulab-measured-bar') as HTMLElement).style.width).toBe('100%');
    expect(cell.title).toContain('top: long scoreboard');
    expect(cell.querySelector('i')?.className).toBe('gpulab-r-long_sb');
    // beside the estimated cost bar
    expect(cell.previousElementSibling?.className).toBe('gpulab-cost');
  });

  it('marks the sampled SASS instructions and names the verdict in the header, lighting its line on hover', () => {
    view.render(golden);
    expect(qa('.gpulab-pane[data-pane="sass"] .gpulab-measured-mark[title]').length).toBe(
      Object.keys(golden.measured.sass).length
    );
    const verdict = q('.gpulab-verdict')!;
    expect(verdict.textContent).toContain(golden.header.measured.verdict);
    verdict.dispatchEvent(new MouseEvent('mouseenter'));
    const row = Number(golden.measured.verdict_key.slice(3)) - 1;
    const lit = q(`.gpulab-pane[data-pane="python"] .gpulab-line[data-line="${row}"]`)!;
    expect(lit.classList.contains('gpulab-active')).toBe(true);
    expect(qa('.gpulab-legend-item').length).toBe(golden.measured.reasons.length);
  });

  it('leaves an unmeasured build without the column', () => {
    view.render({ ...golden, measured: undefined, header: { ...golden.header, measured: undefined } });
    expect(qa('.gpulab-measured, .gpulab-measured-mark, .gpulab-verdict').length).toBe(0);
  });
});
