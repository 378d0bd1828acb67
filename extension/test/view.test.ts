// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { analysisView } from '../src/analysis';
import { IBundle } from '../src/bundle';
import { PALETTE } from '../src/palette';
import {
  BuildView,
  CHUNK_LINES,
  EAGER_LINES,
  MAX_RENDERED_CHUNKS
} from '../src/view';
import { exampleBundle, exampleHeader, sassText } from './fixtures';
import golden from './golden-bundle.json';

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
const line = (pane: string, i: number): HTMLElement =>
  q(`.gpulab-pane[data-pane="${pane}"] .gpulab-line[data-line="${i}"]`) as HTMLElement;
const linked = (pane: string): number[] =>
  qa(`.gpulab-pane[data-pane="${pane}"] .gpulab-line.gpulab-linked`).map(e => Number(e.dataset.line));

function hover(el: HTMLElement): void {
  el.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
}

describe('BuildView', () => {
  it('renders four panes in bundle order with numbered lines', () => {
    view.render(exampleBundle());
    expect(qa('.gpulab-pane').map(p => p.dataset.pane)).toEqual(['python', 'cuda', 'ptx', 'sass']);
    expect(qa('.gpulab-pane[data-pane="python"] .gpulab-line').length).toBe(2);
    expect(qa('.gpulab-pane[data-pane="ptx"] .gpulab-line').length).toBe(60);
    expect(line('python', 0).querySelector('.gpulab-ln')?.textContent).toBe('1');
    expect(line('python', 1).querySelector('.gpulab-text')?.textContent).toBe('    return a + b');
  });

  it('numbers lines from first_line', () => {
    const b = exampleBundle();
    b.panes[0].first_line = 12;
    view.render(b);
    expect(line('python', 0).querySelector('.gpulab-ln')?.textContent).toBe('12');
    expect(line('python', 1).querySelector('.gpulab-ln')?.textContent).toBe('13');
    // Keys (and so colours) do not depend on first_line.
    expect(line('python', 0).style.getPropertyValue('--gpulab-line-bg')).toBe(PALETTE[0]);
  });

  it('colours lines by their first py:N key', () => {
    view.render(exampleBundle());
    expect(line('python', 1).style.getPropertyValue('--gpulab-line-bg')).toBe(PALETTE[1]);
    expect(line('ptx', 57).style.getPropertyValue('--gpulab-line-bg')).toBe(PALETTE[1]);
    expect(line('sass', 12).classList.contains('gpulab-coloured')).toBe(true);
    expect(line('sass', 13).classList.contains('gpulab-coloured')).toBe(false);
    expect(line('sass', 0).style.getPropertyValue('--gpulab-line-bg')).toBe('');
    expect(line('sass', 12).dataset.keys).toBe('py:2 cu:42');
  });

  it('links counterparts on hover and clears on leave', () => {
    view.render(exampleBundle());
    hover(line('python', 1));
    expect(linked('ptx')).toEqual([57]);
    expect(linked('sass')).toEqual([12]);
    expect(linked('cuda')).toEqual([]);
    expect(linked('python')).toEqual([]);
    expect(line('python', 1).classList.contains('gpulab-active')).toBe(true);
    expect(view.node.classList.contains('gpulab-selecting')).toBe(true);

    hover(line('sass', 12));
    expect(linked('python')).toEqual([1]);
    expect(linked('cuda')).toEqual([41]);
    expect(linked('ptx')).toEqual([57]);
    expect(linked('sass')).toEqual([]);
    expect(line('python', 1).classList.contains('gpulab-active')).toBe(false);

    q('.gpulab-panes')!.dispatchEvent(new MouseEvent('mouseleave'));
    expect(qa('.gpulab-linked').length).toBe(0);
    expect(qa('.gpulab-active').length).toBe(0);
  });

  it('pins the selection on click until clicked again or Esc', () => {
    view.render(exampleBundle());
    line('python', 1).click();
    expect(view.pinned).toBe(true);
    expect(line('python', 1).classList.contains('gpulab-pinned')).toBe(true);
    hover(line('python', 0));
    q('.gpulab-panes')!.dispatchEvent(new MouseEvent('mouseleave'));
    expect(linked('sass')).toEqual([12]);

    line('python', 1).click();
    expect(view.pinned).toBe(false);
    expect(line('python', 1).classList.contains('gpulab-pinned')).toBe(false);

    line('cuda', 41).click();
    expect(linked('sass')).toEqual([12]);
    view.node.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
    expect(view.pinned).toBe(false);
    expect(qa('.gpulab-linked').length).toBe(0);
  });

  it('shows every bundle string as text, never as HTML', () => {
    const evil = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>';
    const b = exampleBundle({ name: evil, primitive: evil, target: evil, header: exampleHeader(true, 0, evil) });
    b.panes[0].text = `${evil}\n`;
    b.panes[0].title = evil;
    b.header.chips[0].text = evil;
    b.header.kernels.rows[0].cells.kernel = evil;
    b.header.timings = [[evil, evil]];
    view.render(b);
    expect(view.node.querySelectorAll('img, script').length).toBe(0);
    expect(q('.gpulab-name')?.textContent).toBe(evil);
    expect(line('python', 0).textContent).toContain(evil);
    expect((window as unknown as { __pwned?: number }).__pwned).toBeUndefined();
  });

  it('shows the header: name, primitive, target, LTO, stats, resources, timings', () => {
    view.render(exampleBundle());
    expect(q('.gpulab-name')?.textContent).toBe('add');
    expect(q('[data-field="primitive"]')?.textContent).toBe('reduce');
    expect(q('[data-field="target"]')?.textContent).toBe('sm_90');
    expect(q('[data-field="lto"]')?.textContent).toBe('LTO on');
    expect(q('[data-field="lto"]')?.dataset.tone).toBe('on');
    expect(q('[data-field="sass_instructions"]')?.textContent).toBe('412 SASS instructions');
    expect(q('[data-field="sass_calls"]')?.textContent).toBe('0 CALLs');
    const row = q('tr[data-kernel="gpulab_reduce_partials"]')!;
    expect(row.querySelector('[data-field="registers"]')?.textContent).toBe('32');
    expect(row.querySelector('[data-field="shared_bytes"]')?.textContent).toBe('128 B');
    expect(row.querySelector('[data-field="spill_stores"]')?.textContent).toBe('0');
    expect(q('[data-stage="nvrtc"] .gpulab-timing-value')?.textContent).toBe('31.0 ms');
    expect(q('[data-stage="total"]')).not.toBeNull();
    expect(q('.gpulab-compare-toggle')).toBeNull();
  });

  it('toggles to the compare build and back', () => {
    const other = exampleBundle({ lto: false, stats: { sass_instructions: 500, sass_calls: 7 }, header: exampleHeader(false, 7) });
    other.panes[3].text = sassText(30);
    const b = exampleBundle({ compare: other });
    view.render(b);
    const buttons = qa('.gpulab-compare-toggle .gpulab-variant');
    expect(buttons.map(x => x.textContent)).toEqual(['LTO · 0 CALLs', 'PTX-linked · 7 CALLs']);
    expect(buttons[0].getAttribute('aria-pressed')).toBe('true');
    buttons[1].click();
    expect(view.variant).toBe('compare');
    expect(view.node.dataset.variant).toBe('compare');
    expect(q('[data-field="lto"]')?.textContent).toBe('LTO off');
    expect(q('[data-field="sass_calls"]')?.textContent).toBe('7 CALLs');
    expect(q('[data-field="sass_calls"]')?.dataset.tone).toBe('warn');
    expect(qa('.gpulab-pane[data-pane="sass"] .gpulab-line').length).toBe(30);
    expect(q('.gpulab-variant[data-variant="compare"]')?.getAttribute('aria-pressed')).toBe('true');
    (q('.gpulab-variant[data-variant="main"]') as HTMLElement).click();
    expect(view.variant).toBe('main');
    expect(qa('.gpulab-pane[data-pane="sass"] .gpulab-line').length).toBe(20);
  });

  it('searches a pane: marks, count, Enter for next, Escape to clear', () => {
    view.render(exampleBundle());
    const pane = view.pane('sass')!;
    const input = q('.gpulab-pane[data-pane="sass"] .gpulab-search') as HTMLInputElement;
    input.value = 'nop';
    input.dispatchEvent(new Event('input'));
    expect(pane.matches.length).toBe(19);
    expect(qa('.gpulab-pane[data-pane="sass"] .gpulab-match').length).toBe(19);
    expect(line('sass', 0).querySelector('.gpulab-mark')?.textContent).toBe('NOP');
    expect(pane.currentMatch).toBe(0);
    expect(q('.gpulab-pane[data-pane="sass"] .gpulab-search-count')?.textContent).toBe('1/19');
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
    expect(pane.currentMatch).toBe(1);
    expect(line('sass', 1).classList.contains('gpulab-match-current')).toBe(true);
    expect(line('sass', 0).classList.contains('gpulab-match-current')).toBe(false);
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', shiftKey: true }));
    expect(pane.currentMatch).toBe(0);
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', shiftKey: true }));
    expect(pane.currentMatch).toBe(18);
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape' }));
    expect(input.value).toBe('');
    expect(qa('.gpulab-match, .gpulab-mark').length).toBe(0);
    // The text is whole again after marks are removed.
    expect(line('sass', 12).querySelector('.gpulab-text')?.textContent).toBe(
      sassText().split('\n')[12]
    );
  });

  it('copies pane text with navigator.clipboard', async () => {
    let copied = '';
    Object.defineProperty(navigator, 'clipboard', {
      configurable: true,
      value: { writeText: async (t: string) => void (copied = t) }
    });
    const b = exampleBundle();
    view.render(b);
    const ok = await view.pane('python')!.copy();
    expect(ok).toBe(true);
    expect(copied).toBe(b.panes[0].text);
    expect(q('.gpulab-pane[data-pane="python"] .gpulab-copy')?.textContent).toBe('Copied');
  });

  it('renders large panes lazily, in chunks', () => {
    const n = 30000;
    const sass: Record<string, string[]> = {};
    for (let i = 0; i < n; i++) {
      sass[String(i)] = [`py:${(i % 2) + 1}`];
    }
    const b = exampleBundle();
    b.panes[3].text = sassText(n);
    b.links.sass = sass;
    const t0 = performance.now();
    view.render(b);
    const t1 = performance.now();
    const pane = view.pane('sass')!;
    expect(n).toBeGreaterThan(EAGER_LINES);
    expect(qa('.gpulab-pane[data-pane="sass"] .gpulab-chunk').length).toBe(Math.ceil(n / CHUNK_LINES));
    expect(pane.renderedChunks).toBe(1);
    expect(qa('.gpulab-pane[data-pane="sass"] .gpulab-line').length).toBe(CHUNK_LINES);
    expect(t1 - t0).toBeLessThan(3000);

    // Hovering a Python line links its SASS lines; a line scrolled to is rendered.
    hover(line('python', 1));
    expect(pane.linked.size).toBe(n / 2);
    pane.scrollToLine(25001);
    expect(line('sass', 25001).classList.contains('gpulab-linked')).toBe(true);
    expect(line('sass', 25001).style.getPropertyValue('--gpulab-line-bg')).toBe(PALETTE[1]);

    // Search covers every line, rendered or not.
    pane.search('/*');
    expect(pane.matches.length).toBe(n);

    // The DOM stays bounded however far the pane is scrolled.
    for (let i = 0; i < (MAX_RENDERED_CHUNKS + 8) * CHUNK_LINES; i += CHUNK_LINES) {
      pane.scrollToLine(i);
    }
    expect(pane.renderedChunks).toBeLessThanOrEqual(MAX_RENDERED_CHUNKS);
    expect(qa('.gpulab-pane[data-pane="sass"] .gpulab-line').length).toBe(
      pane.renderedChunks * CHUNK_LINES
    );
    // A line rendered again keeps its state.
    pane.scrollToLine(25001);
    expect(line('sass', 25001).classList.contains('gpulab-linked')).toBe(true);
    expect(line('sass', 25001).classList.contains('gpulab-match')).toBe(true);
  });

  it('survives a malformed bundle', () => {
    view.render(null);
    expect(q('.gpulab-error')).not.toBeNull();
    view.render({ panes: [{ id: 'python', text: 'x = 1\n' }], links: { python: { '0': 'bad' } } });
    expect(qa('.gpulab-pane').length).toBe(1);
    expect(line('python', 0).textContent).toContain('x = 1');
    view.render({ name: 'empty' } as unknown as IBundle);
    expect(q('.gpulab-empty')).not.toBeNull();
  });
});

describe('the golden bundle (a real build; tests/golden/golden_bundle.py)', () => {
  it('shows every field of its header model, and of the compared build', () => {
    view.render(golden);
    const texts = (el: Element | null): string => el?.textContent ?? '';
    for (const variant of ['main', 'compare']) {
      const model = variant === 'main' ? golden.header : golden.compare.header;
      if (variant === 'compare') {
        (q('.gpulab-variant[data-variant="compare"]') as HTMLElement).click();
      }
      expect(texts(q('.gpulab-name'))).toBe(model.title);
      for (const chip of model.chips) {
        expect(texts(q(`.gpulab-chip[data-field="${chip.field}"]`))).toBe(chip.text);
      }
      expect(texts(q('.gpulab-options'))).toBe(model.options);
      expect(qa('.gpulab-resources th').map(texts)).toEqual(model.kernels.columns.map(c => c[1]));
      for (const row of model.kernels.rows) {
        for (const [field, text] of Object.entries(row.cells)) {
          expect(texts(q(`tr[data-kernel="${row.kernel}"] [data-field="${field}"]`))).toBe(text);
        }
      }
      for (const [stage, text] of model.timings) {
        expect(texts(q(`[data-stage="${stage}"] .gpulab-timing-value`))).toBe(text);
      }
    }
    expect(texts(q('[data-field="occupancy_limit"]'))).toBe(golden.compare.resources.gpulab_reduce.occupancy_limit);
  });
});

describe('a cached build', () => {
  it('says where it came from instead of showing the timings of its first build as new', () => {
    const b = exampleBundle();
    b.header.build = 'from the disk cache (built in 1.80 s on 2026-12-03 08:41)';
    view.render(b);
    expect(q('.gpulab-cached')?.textContent).toBe('buildfrom the disk cache (built in 1.80 s on 2026-12-03 08:41)');
    expect(q('.gpulab-timing')).toBeNull();
    expect(q('.gpulab-cached')?.title).toContain('nvrtc 31.0 ms');
  });
});

describe('hovering a Python line', () => {
  it('lights what came from it, and what was inlined with it only faintly', () => {
    const b = exampleBundle();
    b.links.python = { '0': ['py:1', 'cu:42'], '1': ['py:2', 'cu:42'] };
    b.links.sass = { '5': ['cu:42'], '12': ['py:2', 'cu:42'], '13': ['cu:40'] };
    view.render(b);
    hover(line('python', 1));
    expect(linked('sass')).toEqual([12]);
    expect(line('sass', 5).classList.contains('gpulab-along')).toBe(true);
    expect(line('sass', 13).classList.contains('gpulab-along')).toBe(false);
    expect(linked('cuda')).toEqual([41]); // the line it was inlined at
    // The def line: nothing of its own in the SASS, so nothing is lit there as if it were.
    hover(line('python', 0));
    expect(linked('sass')).toEqual([]);
    expect(q('.gpulab-pane[data-pane="sass"] .gpulab-linked-nav')?.hidden).toBe(true);
  });
});

describe('layout', () => {
  const shown = (): string[] => qa('.gpulab-pane:not([hidden])').map(e => e.dataset.pane ?? '');

  it('hides and shows panes from their toggles, never the last one', () => {
    view.render(exampleBundle());
    const toggle = (id: string): HTMLElement => q(`.gpulab-pane-toggle[data-pane="${id}"]`) as HTMLElement;
    toggle('cuda').click();
    toggle('ptx').click();
    expect(shown()).toEqual(['python', 'sass']);
    expect(toggle('cuda').getAttribute('aria-pressed')).toBe('false');
    expect(qa('.gpulab-splitter').length).toBe(1);
    toggle('python').click();
    toggle('sass').click(); // the last pane shown stays
    expect(shown()).toEqual(['sass']);
    expect(qa('.gpulab-splitter').length).toBe(0);
    toggle('python').click();
    expect(shown()).toEqual(['python', 'sass']);
    // The choice survives a switch of build.
    view.render(exampleBundle());
    expect(shown()).toEqual(['python', 'sass']);
  });

  it('shows Python and SASS in a narrow view, all four in a wide one, until the user toggles a pane', () => {
    const win = window as unknown as { ResizeObserver?: unknown };
    const saved = win.ResizeObserver;
    let resized: () => void = () => undefined;
    win.ResizeObserver = class {
      constructor(callback: () => void) {
        resized = callback;
      }
      observe(): void {}
      disconnect(): void {}
    };
    let width = 900;
    const fitted = new BuildView(document);
    fitted.node.getBoundingClientRect = () => ({ width }) as DOMRect;
    document.body.appendChild(fitted.node);
    try {
      fitted.render(exampleBundle());
      const shownIn = (): string[] =>
        Array.from(fitted.node.querySelectorAll('.gpulab-pane:not([hidden])')).map(e => (e as HTMLElement).dataset.pane ?? '');
      expect(shownIn()).toEqual(['python', 'sass']);
      expect(fitted.node.querySelector('.gpulab-pane-toggle[data-pane="cuda"]')?.getAttribute('aria-pressed')).toBe('false');
      expect(fitted.node.querySelectorAll('.gpulab-splitter').length).toBe(1);
      width = 1600;
      resized();
      expect(shownIn()).toEqual(['python', 'cuda', 'ptx', 'sass']);
      width = 900;
      resized();
      (fitted.node.querySelector('.gpulab-pane-toggle[data-pane="ptx"]') as HTMLElement).click();
      expect(shownIn()).toEqual(['python', 'ptx', 'sass']);
      width = 1600;
      resized(); // the user's choice holds
      expect(shownIn()).toEqual(['python', 'ptx', 'sass']);
    } finally {
      fitted.dispose();
      fitted.node.remove();
      win.ResizeObserver = saved;
    }
  });

  it('puts a splitter between shown panes that resizes its neighbours from the keyboard', () => {
    view.render(exampleBundle());
    const splitters = qa('.gpulab-splitter');
    expect(splitters.length).toBe(3);
    expect(splitters[0].getAttribute('role')).toBe('separator');
    const [python, cuda] = ['python', 'cuda'].map(id => q(`.gpulab-pane[data-pane="${id}"]`) as HTMLElement);
    python.getBoundingClientRect = () => ({ width: 300 }) as DOMRect;
    cuda.getBoundingClientRect = () => ({ width: 500 }) as DOMRect;
    splitters[0].dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true }));
    expect(Number(python.style.flexGrow)).toBe(324);
    expect(Number(cuda.style.flexGrow)).toBe(476);
  });

  it('expands to fill the window and Esc puts it back', () => {
    view.render(exampleBundle());
    (q('.gpulab-expand') as HTMLElement).click();
    expect(view.node.classList.contains('gpulab-expanded')).toBe(true);
    expect(q('.gpulab-expand')?.textContent).toBe('Restore');
    view.node.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
    expect(view.expanded).toBe(false);
  });

  it('marks linked lines beside the scrollbar and steps through them', () => {
    const b = exampleBundle();
    b.links.sass = { '3': ['py:2'], '12': ['py:2', 'cu:42'], '17': ['py:2'] };
    view.render(b);
    hover(line('python', 1));
    const sass = q('.gpulab-pane[data-pane="sass"]') as HTMLElement;
    const ticks = Array.from(sass.querySelectorAll('.gpulab-mark-tick')) as HTMLElement[];
    expect(ticks.map(t => t.dataset.line)).toEqual(['3', '12', '17']);
    expect(ticks[1].style.top).toBe(`${(Math.floor((12 / 20) * 400) / 400) * 100}%`);
    const nav = sass.querySelector('.gpulab-linked-nav') as HTMLElement;
    expect(nav.hidden).toBe(false);
    expect(nav.textContent).toContain('3 linked');
    (sass.querySelector('.gpulab-linked-next') as HTMLElement).click();
    (sass.querySelector('.gpulab-linked-next') as HTMLElement).click();
    expect(nav.textContent).toContain('2/3 linked');
    expect(line('sass', 12).classList.contains('gpulab-linked-current')).toBe(true);
    view.node.querySelector('.gpulab-panes')!.dispatchEvent(new MouseEvent('mouseleave'));
    expect(nav.hidden).toBe(true);
  });

  it('steps through the linked lines with N and Shift+N, in the focused pane or the SASS', () => {
    const b = exampleBundle();
    b.links.sass = { '3': ['py:2'], '12': ['py:2', 'cu:42'], '17': ['py:2'] };
    view.render(b);
    line('python', 1).click(); // pinned: the links stay while the keyboard is used
    const sass = q('.gpulab-pane[data-pane="sass"]') as HTMLElement;
    const count = sass.querySelector('.gpulab-linked-count') as HTMLElement;
    const key = (target: Element, k: string, shiftKey = false) =>
      target.dispatchEvent(new KeyboardEvent('keydown', { key: k, shiftKey, bubbles: true }));
    // From the Python pane, which has no other linked lines: the SASS steps.
    key(q('.gpulab-pane[data-pane="python"] .gpulab-scroller')!, 'n');
    expect(count.textContent).toBe('1/3 linked');
    const scroller = sass.querySelector('.gpulab-scroller')!;
    key(scroller, 'n');
    expect(count.textContent).toBe('2/3 linked');
    expect(line('sass', 12).classList.contains('gpulab-linked-current')).toBe(true);
    key(scroller, 'N', true);
    key(scroller, 'N', true);
    expect(count.textContent).toBe('3/3 linked');
    expect(line('sass', 17).classList.contains('gpulab-linked-current')).toBe(true);
    // Typing in a search box is typing, not stepping.
    key(sass.querySelector('input')!, 'n');
    expect(count.textContent).toBe('3/3 linked');
  });
});

/** A small analysis of the example bundle: SASS line 12 is the return line's FADD, line 13 the peak. */
const ANALYSIS = {
  sass_fields: ['class', 'role', 'python_line', 'cuda_line', 'live'],
  sass: { '12': ['fp32', 'computes', 2, 42, 9], '13': ['global', 'kernel', null, 40, 16] },
  costs: {
    labels: { fp32: 'FP32', int: 'integer', '<b>': 'x' },
    python: [
      { line: 11, key: 'py:1', computes: { int: 2 }, supports: {}, total: 2, peak_live: 4 },
      { line: 12, key: 'py:2', computes: { fp32: 6, '<b>': 1 }, supports: { int: 1 }, total: 8, peak_live: 9 }
    ]
  },
  pressure: { k: { registers: 32, peak_live: 16, peak_sass_line: 13 } },
  opcodes: { sass: { '12': 'FADD', '13': 'NOSUCHOP' }, ptx: {} },
  guide: { sass: { FADD: { text: 'FADD (FP32): Adds two 32-bit floats.' } }, ptx: {} }
};

const HEADER_FINDINGS = {
  pressure: [{ kernel: 'k', text: '32 registers: 100% occupancy; at 33 it would drop to 75%.', key: 'py:2' }],
  diagnostics: [
    { kind: 'float64', severity: 'warning', key: 'py:2', line: 'Python line 2',
      message: 'line 2 computes in float64: <img src=x>', fix: 'write f32(0.75)' },
    { kind: 'index64', severity: 'info', key: 'javascript:1', line: 'template', message: 'wide', fix: 'nothing' }
  ]
};

function render(): void {
  const bundle = exampleBundle();
  view.render({ ...bundle, analysis: ANALYSIS, header: { ...bundle.header, ...HEADER_FINDINGS } });
}

describe('why is it slow, in the extension', () => {
  it('draws a cost bar per Python line, as wide as its share of the heaviest, by class', () => {
    render();
    const cells = qa('.gpulab-pane[data-pane="python"] .gpulab-cost');
    expect(cells.length).toBe(2);
    const bar = cells[1].querySelector('.gpulab-cost-bar') as HTMLElement;
    expect(bar.style.width).toBe('100%');
    expect((cells[0].querySelector('.gpulab-cost-bar') as HTMLElement).style.width).toBe('25%');
    expect(cells[1].title).toBe('8 SASS instructions: 6 FP32, 1 x, 1 integer; peak 9 live registers');
    // A class id that is not a plain word is drawn as `other`, never put into a class name.
    expect(Array.from(bar.children).map(c => c.className)).toEqual(['gpulab-k-fp32', 'gpulab-k-other', 'gpulab-k-int']);
  });

  it('draws a live-register bar beside the SASS with the peak marked and named in the title bar', () => {
    render();
    const sass = q('.gpulab-pane[data-pane="sass"]') as HTMLElement;
    const peak = sass.querySelector('.gpulab-line[data-line="13"] .gpulab-live') as HTMLElement;
    expect(peak.classList.contains('gpulab-live-peak')).toBe(true);
    expect(peak.title).toBe('16 of 32 registers live (the peak)');
    expect((peak.firstChild as HTMLElement).style.width).toBe('50%');
    expect(sass.querySelector('.gpulab-pane-lines')?.textContent).toMatch(/^peak 16 live at line 14 · /);
    expect(sass.querySelectorAll('.gpulab-live-peak').length).toBe(1);
  });

  it("gives SASS opcodes the guide's line, and says when the guide does not know one", () => {
    render();
    const op = (i: number): HTMLElement =>
      q(`.gpulab-pane[data-pane="sass"] .gpulab-line[data-line="${i}"] .gpulab-op`) as HTMLElement;
    expect(op(12).title).toBe('FADD (FP32): Adds two 32-bit floats.');
    expect(op(13).title).toBe("NOSUCHOP: not in gpulab's instruction guide");
  });

  it('shows registers and diagnostics in the header; hovering one lights its Python line', () => {
    render();
    expect(q('.gpulab-registers')?.textContent).toContain('100% occupancy; at 33 it would drop to 75%');
    const items = qa('.gpulab-diagnostic');
    expect(items.map(i => i.dataset.kind)).toEqual(['float64', 'index64']);
    expect(items[0].textContent).toContain('<img src=x>'); // text, not markup
    expect(q('.gpulab-diagnostic img')).toBeNull();
    expect(items[0].querySelector('.gpulab-diagnostic-fix')?.textContent).toBe('Fix: write f32(0.75)');
    expect(items[1].dataset.key).toBeUndefined(); // not a py:N key: linked to nothing
    items[0].dispatchEvent(new MouseEvent('mouseenter'));
    expect(view.selection).toEqual({ pane: 'python', line: 1 });
    items[0].click();
    expect(view.pinned).toBe(true);
  });

  it('draws the golden build: a cost bar on its return line, its compared build with its diagnostics', () => {
    view.render(golden);
    const bars = qa('.gpulab-pane[data-pane="python"] .gpulab-cost[title]');
    expect(bars.length).toBe(golden.analysis.costs.python.length);
    (q('.gpulab-variant[data-variant="compare"]') as HTMLElement).click();
    expect(qa('.gpulab-diagnostic').map(i => i.dataset.kind)).toEqual(
      golden.compare.header.diagnostics.map(d => d.kind)
    );
  });

  it('is empty for a bundle without an analysis', () => {
    const found = analysisView(undefined);
    expect(found.costs.size + found.pressure.size).toBe(0);
    view.render(exampleBundle());
    expect(q('.gpulab-cost, .gpulab-live, .gpulab-diagnostics')).toBeNull();
  });
});
