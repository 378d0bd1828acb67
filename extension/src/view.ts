/**
 * The build view's DOM: header, compare toggle and four linked panes.
 *
 * Framework-free (plain DOM) so that it can be tested under jsdom; the
 * JupyterLab renderer in index.ts wraps it in a Lumino widget.
 *
 * Every bundle string is put in the page with textContent or as an
 * attribute value, never parsed as HTML.
 *
 * Large panes (tens of thousands of SASS lines) are cut into chunks of
 * CHUNK_LINES lines. A chunk starts as an empty block of the right height
 * and is filled with line elements only when it nears the pane's visible
 * window (IntersectionObserver), or when a line in it is scrolled to.
 */
import { IAnalysisView, analysisView } from './analysis';
import { IMeasuredView, measuredGutter, measuredHeader, measuredView } from './measured';
import { IBundle, IPane, normalizeBundle } from './bundle';
import { IBuildHost, IControls, controlsBar, diffPane } from './controls';
import { IToken, LineTokenizer, segments, tokenizerFor } from './highlight';
import { firstHidden } from './layout';
import { LineMap, scrollTarget, splitLines } from './linemap';
import { findLines, foldLines, matchRanges, nextMatch } from './search';

/** Lines per lazily rendered chunk. */
export const CHUNK_LINES = 200;
/** Panes with at most this many lines are rendered at once. */
export const EAGER_LINES = 2000;
/**
 * At most this many chunks of a pane hold line elements; beyond it, the
 * chunks farthest from the visible window are emptied again.
 */
export const MAX_RENDERED_CHUNKS = 30;
/** Rows of the strip beside a pane's scrollbar that marks where its linked lines are. */
const MARK_ROWS = 400;
/** Narrowest a pane may be dragged to, in pixels. */
const MIN_PANE_PX = 120;
/** Pixels a splitter moves per arrow key. */
const SPLIT_STEP_PX = 24;
/** Panes with more lines than this debounce typing in their search box. */
const SEARCH_DEBOUNCE_LINES = 5000;

type Doc = Document;

/**
 * A pane's share of its row, from its longest line (`widest` characters): room for that line where
 * there is some (a short Python function shows whole, and takes no more), and of what is left more
 * for panes of longer lines. `gpulab/display/html.py` (`_flex`) shares rows alike.
 */
export function paneFlex(widest: number, id: string): string {
  // Where the row is short of room the Python pane gives first: the SASS keeps its operands.
  const shrink = id === 'python' ? 3 : 1;
  return `${Math.max(1, Math.min(80, widest) - 32)} ${shrink} min(${widest + 12}ch, 36em)`;
}

function h<K extends keyof HTMLElementTagNameMap>(
  doc: Doc,
  tag: K,
  cls?: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const e = doc.createElement(tag);
  if (cls) {
    e.className = cls;
  }
  if (text !== undefined) {
    e.textContent = text;
  }
  return e;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

interface IChunk {
  start: number;
  end: number;
  el: HTMLElement;
  rendered: boolean;
}

/** What a pane asks of the view that holds it. */
interface IPaneHost {
  readonly map: LineMap;
  /** Cost bars (Python), live-register bars (SASS) and opcode hints (SASS, PTX). */
  readonly analysis: IAnalysisView;
  /** What was measured on the lines (measured.ts; empty for an unprofiled build). */
  readonly measured: IMeasuredView;
}

/** One pane: header (title, search, copy) and its lazily rendered lines. */
export class PaneView {
  readonly id: string;
  readonly node: HTMLElement;
  readonly scroller: HTMLElement;
  readonly code: HTMLElement;
  readonly lines: string[];

  private readonly _doc: Doc;
  private readonly _pane: IPane;
  private readonly _host: IPaneHost;
  private readonly _tokenize: LineTokenizer;
  private readonly _chunks: IChunk[] = [];
  private readonly _rendered = new Set<number>();
  private readonly _lineEls = new Map<number, HTMLElement>();
  private _folded: string[] | null = null;
  private _linked = new Set<number>();
  private _active: number | null = null;
  private _pinned = false;
  private _query = '';
  private _matches: number[] = [];
  private _matchSet = new Set<number>();
  private _current = -1;
  private _observer: IntersectionObserver | null = null;
  private _lineHeight = 0;
  private _searchTimer: ReturnType<typeof setTimeout> | null = null;
  private _copyTimer: ReturnType<typeof setTimeout> | null = null;
  private _scrollFallback: (() => void) | null = null;
  private readonly _searchInput: HTMLInputElement;
  private readonly _searchCount: HTMLElement;
  private readonly _copyButton: HTMLButtonElement;
  private readonly _nav: HTMLElement;
  private readonly _navCount: HTMLElement;
  private readonly _marks: HTMLElement;
  private _linkedOrder: number[] = [];
  private _along = new Set<number>();
  private _linkedAt = -1;

  constructor(doc: Doc, pane: IPane, host: IPaneHost) {
    this._doc = doc;
    this._pane = pane;
    this._host = host;
    this.id = pane.id;
    this.lines = splitLines(pane.text);
    this._tokenize = tokenizerFor(pane.language, pane.text);

    const node = h(doc, 'section', 'gpulab-pane');
    node.dataset.pane = pane.id;
    node.dataset.language = pane.language;
    node.setAttribute('aria-label', pane.title);
    let widest = 0;
    for (const l of this.lines) {
      if (l.length > widest) {
        widest = l.length;
      }
    }
    node.style.flex = paneFlex(widest, pane.id);
    this.node = node;

    // Header: title, line count, search box, match count, copy button.
    const header = h(doc, 'div', 'gpulab-pane-header');
    const title = h(doc, 'span', 'gpulab-pane-title', pane.title);
    const peak = pane.id === 'sass' ? host.analysis.peakNote : '';
    const count = h(
      doc,
      'span',
      'gpulab-pane-lines',
      (peak ? `${peak} · ` : '') + plural(this.lines.length, 'line')
    );
    const search = h(doc, 'input', 'gpulab-search');
    search.type = 'search';
    search.placeholder = 'Search';
    search.spellcheck = false;
    search.setAttribute('aria-label', `Search ${pane.title}`);
    search.title = 'Enter: next match, Shift+Enter: previous, Esc: clear';
    // Keep JupyterLab's notebook shortcuts away from what is typed here.
    search.setAttribute('data-lm-suppress-shortcuts', 'true');
    this._searchInput = search;
    this._searchCount = h(doc, 'span', 'gpulab-search-count');
    this._searchCount.setAttribute('aria-live', 'polite');
    const copy = h(doc, 'button', 'gpulab-copy', 'Copy');
    copy.type = 'button';
    copy.title = `Copy the ${pane.title} text`;
    this._copyButton = copy;
    // Where the lines linked to the selection are: step through them, and see them beside the scrollbar.
    const nav = h(doc, 'span', 'gpulab-linked-nav');
    nav.hidden = true;
    const prev = h(doc, 'button', 'gpulab-linked-prev', '‹');
    prev.type = 'button';
    prev.title = 'Previous linked line (Shift+N)';
    prev.setAttribute('aria-label', 'Previous linked line');
    const next = h(doc, 'button', 'gpulab-linked-next', '›');
    next.type = 'button';
    next.title = 'Next linked line (N)';
    next.setAttribute('aria-label', 'Next linked line');
    this._navCount = h(doc, 'span', 'gpulab-linked-count');
    prev.addEventListener('click', () => this.stepLinked(-1));
    next.addEventListener('click', () => this.stepLinked(1));
    nav.append(prev, this._navCount, next);
    this._nav = nav;
    header.append(title, count, nav, search, this._searchCount, copy);

    const scroller = h(doc, 'div', 'gpulab-scroller');
    scroller.tabIndex = 0;
    scroller.setAttribute('role', 'region');
    scroller.setAttribute('aria-label', `${pane.title} code`);
    const code = h(doc, 'div', 'gpulab-code');
    const lastNumber = pane.first_line + Math.max(0, this.lines.length - 1);
    const digits = Math.max(String(lastNumber).length, String(pane.first_line).length, 2);
    code.style.setProperty('--gpulab-gutter-ch', String(digits));
    scroller.appendChild(code);
    this.scroller = scroller;
    this.code = code;
    const body = h(doc, 'div', 'gpulab-pane-body');
    this._marks = h(doc, 'div', 'gpulab-marks');
    this._marks.setAttribute('aria-hidden', 'true');
    this._marks.addEventListener('click', this._onMarkClick);
    body.append(scroller, this._marks);
    node.append(header, body);

    search.addEventListener('input', this._onSearchInput);
    search.addEventListener('keydown', this._onSearchKey);
    copy.addEventListener('click', this._onCopy);

    this._buildChunks();
  }

  get pane(): IPane {
    return this._pane;
  }

  /** Materialized line element of 0-based line `i`, if any. */
  lineElement(i: number): HTMLElement | undefined {
    return this._lineEls.get(i);
  }

  /** Current search matches (0-based lines). */
  get matches(): readonly number[] {
    return this._matches;
  }

  /** Index into matches of the current match, -1 if none. */
  get currentMatch(): number {
    return this._current;
  }

  dispose(): void {
    this._observer?.disconnect();
    this._observer = null;
    if (this._scrollFallback) {
      this.scroller.removeEventListener('scroll', this._scrollFallback);
    }
    if (this._searchTimer !== null) {
      clearTimeout(this._searchTimer);
    }
    if (this._copyTimer !== null) {
      clearTimeout(this._copyTimer);
    }
    this._searchInput.removeEventListener('input', this._onSearchInput);
    this._searchInput.removeEventListener('keydown', this._onSearchKey);
    this._copyButton.removeEventListener('click', this._onCopy);
    this._marks.removeEventListener('click', this._onMarkClick);
  }

  // ---- chunks and lines --------------------------------------------------

  private _buildChunks(): void {
    const n = this.lines.length;
    const eager = n <= EAGER_LINES;
    const IO = (this._doc.defaultView as (Window & typeof globalThis) | null)
      ?.IntersectionObserver;
    if (!eager && IO) {
      this._observer = new IO(
        entries => {
          for (const e of entries) {
            if (e.isIntersecting) {
              const idx = Number((e.target as HTMLElement).dataset.chunk);
              this.ensureChunk(idx);
            }
          }
        },
        { root: this.scroller, rootMargin: '600px 0px 600px 0px' }
      );
    }
    const frag = this._doc.createDocumentFragment();
    for (let start = 0, k = 0; start < n; start += CHUNK_LINES, k++) {
      const end = Math.min(n, start + CHUNK_LINES);
      const el = h(this._doc, 'div', 'gpulab-chunk');
      el.dataset.chunk = String(k);
      el.style.setProperty('--gpulab-chunk-lines', String(end - start));
      const chunk: IChunk = { start, end, el, rendered: false };
      this._chunks.push(chunk);
      frag.appendChild(el);
    }
    this.code.appendChild(frag);
    if (eager) {
      for (let k = 0; k < this._chunks.length; k++) {
        this.ensureChunk(k);
      }
      return;
    }
    // Always have the top of the pane at once.
    this.ensureChunk(0);
    if (this._observer) {
      for (const c of this._chunks) {
        if (!c.rendered) {
          this._observer.observe(c.el);
        }
      }
    } else {
      // No IntersectionObserver: render what the scroll position shows.
      this._scrollFallback = () => this._renderVisible();
      this.scroller.addEventListener('scroll', this._scrollFallback, {
        passive: true
      });
    }
  }

  private _renderVisible(): void {
    const lh = this.lineHeight();
    if (lh <= 0) {
      return;
    }
    const first = Math.floor(this.scroller.scrollTop / lh);
    const last = Math.ceil((this.scroller.scrollTop + this.scroller.clientHeight) / lh);
    const k0 = Math.max(0, Math.floor(first / CHUNK_LINES) - 1);
    const k1 = Math.min(this._chunks.length - 1, Math.floor(last / CHUNK_LINES) + 1);
    for (let k = k0; k <= k1; k++) {
      this.ensureChunk(k);
    }
  }

  /** Fill chunk `k` with its line elements (no-op when already filled). */
  ensureChunk(k: number): void {
    const c = this._chunks[k];
    if (!c || c.rendered) {
      return;
    }
    c.rendered = true;
    this._rendered.add(k);
    this._observer?.unobserve(c.el);
    const frag = this._doc.createDocumentFragment();
    for (let i = c.start; i < c.end; i++) {
      frag.appendChild(this._renderLine(i));
    }
    c.el.appendChild(frag);
    c.el.classList.add('gpulab-chunk-rendered');
    if (this._rendered.size > MAX_RENDERED_CHUNKS) {
      this._evict(k);
    }
  }

  /** Empty the chunks farthest from the visible window (and from chunk `keep`). */
  private _evict(keep: number): void {
    const range = this.visibleRange();
    const centre = range
      ? Math.floor((range[0] + range[1]) / 2 / CHUNK_LINES)
      : keep;
    const order = Array.from(this._rendered)
      .filter(k => k !== keep && k !== centre)
      .sort((a, b) => Math.abs(b - centre) - Math.abs(a - centre));
    // Leave some room so that not every new chunk evicts one.
    const target = Math.floor(MAX_RENDERED_CHUNKS * 0.75);
    for (const k of order) {
      if (this._rendered.size <= target) {
        break;
      }
      const c = this._chunks[k];
      for (let i = c.start; i < c.end; i++) {
        this._lineEls.delete(i);
      }
      c.el.textContent = '';
      c.el.classList.remove('gpulab-chunk-rendered');
      c.rendered = false;
      this._rendered.delete(k);
      this._observer?.observe(c.el);
    }
  }

  /** Number of chunks that hold line elements. */
  get renderedChunks(): number {
    return this._rendered.size;
  }

  private _renderLine(i: number): HTMLElement {
    const map = this._host.map;
    const line = h(this._doc, 'div', 'gpulab-line');
    line.dataset.line = String(i);
    const keys = map.keysOf(this.id, i);
    if (keys.length) {
      line.dataset.keys = keys.join(' ');
      const colour = map.colourOf(this.id, i);
      if (colour) {
        line.style.setProperty('--gpulab-line-bg', colour);
        line.classList.add('gpulab-coloured');
      }
    }
    const ln = h(this._doc, 'span', 'gpulab-ln', String(this._pane.first_line + i));
    ln.setAttribute('aria-hidden', 'true');
    const text = h(this._doc, 'span', 'gpulab-text');
    line.append(ln);
    const gutter = this._gutter(i);
    if (gutter) {
      line.append(gutter);
    }
    const measured = measuredGutter(this._doc, this._host.measured, this.id, i);
    if (measured) {
      line.append(measured);
    }
    line.append(text);
    this._fillText(text, i);
    if (this._linked.has(i)) {
      line.classList.add('gpulab-linked');
    }
    if (this._along.has(i)) {
      line.classList.add('gpulab-along');
    }
    if (this._active === i) {
      line.classList.add('gpulab-active');
      if (this._pinned) {
        line.classList.add('gpulab-pinned');
      }
    }
    if (this._matchSet.has(i)) {
      line.classList.add('gpulab-match');
      if (this._current >= 0 && this._matches[this._current] === i) {
        line.classList.add('gpulab-match-current');
      }
    }
    this._lineEls.set(i, line);
    return line;
  }

  /** The cost bar (Python) or live-register bar (SASS) beside line `i`; null for other panes. */
  private _gutter(i: number): HTMLElement | null {
    const { costs, pressure } = this._host.analysis;
    if (this.id === 'python' && costs.size) {
      const cell = h(this._doc, 'span', 'gpulab-cost');
      const bar = costs.get(i);
      if (bar) {
        cell.title = bar.title;
        const stack = h(this._doc, 'span', 'gpulab-cost-bar');
        stack.style.width = `${bar.width}%`;
        for (const [klass, n] of bar.segments) {
          const seg = h(this._doc, 'i', `gpulab-k-${klass}`);
          seg.style.flexGrow = String(n);
          stack.appendChild(seg);
        }
        cell.appendChild(stack);
      }
      return cell;
    }
    if (this.id === 'sass' && pressure.size) {
      const cell = h(this._doc, 'span', 'gpulab-live');
      const bar = pressure.get(i);
      if (bar) {
        cell.title = bar.title;
        cell.classList.toggle('gpulab-live-peak', bar.peak);
        const fill = h(this._doc, 'span', 'gpulab-live-bar');
        fill.style.width = `${bar.width}%`;
        cell.appendChild(fill);
      }
      return cell;
    }
    return null;
  }

  /** Give the line's opcode (its first keyword token) the instruction guide's one line as a tooltip. */
  private _hint(target: HTMLElement, i: number): void {
    const hint = this._host.analysis.hints.get(this.id)?.get(i);
    const op = hint ? target.querySelector('.tok-keyword') : null;
    if (hint && op) {
      op.classList.add('gpulab-op');
      (op as HTMLElement).title = hint;
    }
  }

  private _fillText(target: HTMLElement, i: number): void {
    this._fillTokens(target, i);
    this._hint(target, i);
  }

  private _fillTokens(target: HTMLElement, i: number): void {
    const text = this.lines[i];
    target.textContent = '';
    if (text.length === 0) {
      return;
    }
    let tokens: IToken[];
    try {
      tokens = this._tokenize(i, text);
    } catch {
      tokens = [];
    }
    const marks =
      this._query && this._matchSet.has(i) ? matchRanges(text, this._query) : [];
    if (tokens.length === 0 && marks.length === 0) {
      target.textContent = text;
      return;
    }
    for (const seg of segments(text.length, tokens, marks)) {
      const piece = text.slice(seg.from, seg.to);
      if (!seg.cls && !seg.mark) {
        target.appendChild(this._doc.createTextNode(piece));
        continue;
      }
      const span = h(this._doc, 'span', seg.cls, piece);
      if (seg.mark) {
        span.classList.add('gpulab-mark');
      }
      target.appendChild(span);
    }
  }

  // ---- geometry and scrolling --------------------------------------------

  /** Height of one line in pixels (0 while the pane is not laid out). */
  lineHeight(): number {
    if (this._lineHeight > 0) {
      return this._lineHeight;
    }
    const c = this._chunks[0];
    if (!c) {
      return 0;
    }
    const hgt = c.el.getBoundingClientRect().height;
    const n = c.end - c.start;
    if (hgt > 0 && n > 0) {
      this._lineHeight = hgt / n;
    }
    return this._lineHeight;
  }

  /** [first, last] lines in the visible window, or null if not laid out. */
  visibleRange(): [number, number] | null {
    const lh = this.lineHeight();
    if (lh <= 0) {
      return null;
    }
    const top = this.scroller.scrollTop;
    const first = Math.floor(top / lh);
    const last = Math.max(first, Math.ceil((top + this.scroller.clientHeight) / lh) - 1);
    return [first, last];
  }

  /** Render line `i` and scroll this pane (only) so that it shows. */
  scrollToLine(i: number): void {
    if (i < 0 || i >= this.lines.length) {
      return;
    }
    this.ensureChunk(Math.floor(i / CHUNK_LINES));
    const lh = this.lineHeight();
    if (lh <= 0) {
      return;
    }
    const top = i * lh;
    const view = this.scroller.clientHeight;
    const cur = this.scroller.scrollTop;
    if (top >= cur && top + lh <= cur + view) {
      return;
    }
    this.scroller.scrollTop = Math.max(0, top - Math.max(0, (view - lh) / 3));
  }

  /** Scroll sideways so that `target` (inside line `el`) shows. */
  private _revealX(el: HTMLElement, target: HTMLElement): void {
    const sr = this.scroller.getBoundingClientRect();
    const tr = target.getBoundingClientRect();
    if (sr.width <= 0) {
      return;
    }
    const gutter = (el.querySelector('.gpulab-ln') as HTMLElement | null)?.getBoundingClientRect().width ?? 0;
    const left = sr.left + gutter;
    if (tr.left < left || tr.right > sr.right) {
      this.scroller.scrollLeft = Math.max(0, this.scroller.scrollLeft + tr.left - left - 24);
    }
  }

  /** Scroll so that one of sorted `lines` shows, unless one already does. */
  reveal(lines: readonly number[]): void {
    if (lines.length === 0) {
      return;
    }
    const range = this.visibleRange();
    const target =
      range === null ? lines[0] : scrollTarget(lines, range[0], range[1]);
    if (target !== null) {
      this.scrollToLine(target);
    }
  }

  // ---- link highlighting -------------------------------------------------

  /**
   * Mark `lines` (sorted) as linked to the selection, and `along` as inlined along with it
   * (shown faintly, not counted or marked); unmark the rest.
   */
  setLinked(lines: readonly number[], along: readonly number[] = []): void {
    const faint = new Set(along);
    for (const i of this._along) {
      if (!faint.has(i)) {
        this._lineEls.get(i)?.classList.remove('gpulab-along');
      }
    }
    for (const i of faint) {
      this._lineEls.get(i)?.classList.add('gpulab-along');
    }
    this._along = faint;
    const next = new Set(lines);
    for (const i of this._linked) {
      if (!next.has(i)) {
        this._lineEls.get(i)?.classList.remove('gpulab-linked');
      }
    }
    for (const i of next) {
      if (!this._linked.has(i)) {
        this._lineEls.get(i)?.classList.add('gpulab-linked');
      }
    }
    this._linked = next;
    this._linkedOrder = Array.from(next).sort((a, b) => a - b);
    this._linkedAt = -1;
    this._drawMarks();
  }

  /** Ticks beside the scrollbar where the linked lines are (one per pixel row at most). */
  private _drawMarks(): void {
    this._marks.textContent = '';
    const n = this.lines.length;
    const order = this._linkedOrder;
    this._nav.hidden = order.length === 0;
    this._updateNav();
    if (order.length === 0 || n === 0) {
      return;
    }
    const rows = new Set<number>();
    const frag = this._doc.createDocumentFragment();
    for (const i of order) {
      const row = Math.floor((i / n) * MARK_ROWS);
      if (rows.has(row)) {
        continue;
      }
      rows.add(row);
      const tick = h(this._doc, 'span', 'gpulab-mark-tick');
      tick.style.top = `${(row / MARK_ROWS) * 100}%`;
      tick.dataset.line = String(i);
      frag.appendChild(tick);
    }
    this._marks.appendChild(frag);
  }

  private _onMarkClick = (event: MouseEvent): void => {
    const tick = (event.target as HTMLElement | null)?.closest?.('.gpulab-mark-tick') as HTMLElement | null;
    if (tick) {
      const i = Number(tick.dataset.line);
      this._linkedAt = this._linkedOrder.indexOf(i);
      this.scrollToLine(i);
      this._updateNav();
    }
  };

  /** Scroll to the next (`+1`) or previous (`-1`) linked line. */
  stepLinked(direction: 1 | -1): void {
    const order = this._linkedOrder;
    if (order.length === 0) {
      return;
    }
    if (this._linkedAt < 0) {
      const top = this.visibleRange()?.[0] ?? -1;
      const after = order.findIndex(i => i > top);
      this._linkedAt = direction > 0 ? (after < 0 ? 0 : after) : (after <= 0 ? order.length - 1 : after - 1);
    } else {
      this._linkedAt = (this._linkedAt + direction + order.length) % order.length;
    }
    const line = order[this._linkedAt];
    this.scrollToLine(line);
    this._lineEls.forEach(e => e.classList.remove('gpulab-linked-current'));
    this._lineEls.get(line)?.classList.add('gpulab-linked-current');
    this._updateNav();
  }

  private _updateNav(): void {
    const n = this._linkedOrder.length;
    this._navCount.textContent = this._linkedAt >= 0 ? `${this._linkedAt + 1}/${n} linked` : `${n} linked`;
  }

  /** Lines currently marked as linked. */
  get linked(): ReadonlySet<number> {
    return this._linked;
  }

  /** Mark line `i` as the hovered or pinned one (null: none). */
  setActive(i: number | null, pinned: boolean): void {
    if (this._active !== null) {
      const old = this._lineEls.get(this._active);
      old?.classList.remove('gpulab-active', 'gpulab-pinned');
    }
    this._active = i;
    this._pinned = pinned && i !== null;
    if (i !== null) {
      const e = this._lineEls.get(i);
      if (e) {
        e.classList.add('gpulab-active');
        e.classList.toggle('gpulab-pinned', this._pinned);
      }
    }
  }

  // ---- search ------------------------------------------------------------

  private _onSearchInput = (): void => {
    if (this._searchTimer !== null) {
      clearTimeout(this._searchTimer);
      this._searchTimer = null;
    }
    if (this.lines.length > SEARCH_DEBOUNCE_LINES) {
      this._searchTimer = setTimeout(() => {
        this._searchTimer = null;
        this._applyInput();
      }, 150);
    } else {
      this._applyInput();
    }
  };

  private _applyInput(): void {
    const q = this._searchInput.value;
    if (q === this._query) {
      return;
    }
    this.search(q);
    // Like a browser's find: go to the first match at or below the top.
    if (this._matches.length) {
      const range = this.visibleRange();
      const from = range ? range[0] - 1 : null;
      this.gotoMatch(nextMatch(this._matches, from));
    }
  }

  private _onSearchKey = (event: KeyboardEvent): void => {
    // Nothing typed here is for the notebook.
    event.stopPropagation();
    if (event.key === 'Enter') {
      event.preventDefault();
      if (this._searchTimer !== null) {
        clearTimeout(this._searchTimer);
        this._searchTimer = null;
      }
      if (this._searchInput.value !== this._query) {
        this._applyInput();
        return;
      }
      this.next(event.shiftKey);
    } else if (event.key === 'Escape') {
      event.preventDefault();
      this._searchInput.value = '';
      this.search('');
    }
  };

  /** Set the search query (case-insensitive); marks matches, keeps scroll. */
  search(query: string): void {
    const oldSet = this._matchSet;
    const oldCurrent = this._current >= 0 ? this._matches[this._current] : null;
    this._query = query;
    if (query && this._folded === null) {
      this._folded = foldLines(this.lines);
    }
    this._matches = query ? findLines(this._folded as string[], query) : [];
    this._matchSet = new Set(this._matches);
    this._current = -1;
    if (oldCurrent !== null) {
      this._lineEls.get(oldCurrent)?.classList.remove('gpulab-match-current');
    }
    for (const [i, e] of this._lineEls) {
      const was = oldSet.has(i);
      const is = this._matchSet.has(i);
      if (was || is) {
        e.classList.toggle('gpulab-match', is);
        const text = e.querySelector('.gpulab-text') as HTMLElement | null;
        if (text) {
          this._fillText(text, i);
        }
      }
    }
    if (this._searchInput.value !== query) {
      this._searchInput.value = query;
    }
    this._updateCount();
  }

  /** Go to the next (or previous) match after the current one. */
  next(backwards = false): void {
    const from =
      this._current >= 0
        ? this._matches[this._current]
        : (this.visibleRange()?.[0] ?? 0) - (backwards ? 0 : 1);
    this.gotoMatch(nextMatch(this._matches, from, backwards));
  }

  /** Make match `idx` (index into matches) the current one and show it. */
  gotoMatch(idx: number): void {
    if (idx < 0 || idx >= this._matches.length) {
      this._updateCount();
      return;
    }
    if (this._current >= 0) {
      this._lineEls
        .get(this._matches[this._current])
        ?.classList.remove('gpulab-match-current');
    }
    this._current = idx;
    const line = this._matches[idx];
    this.scrollToLine(line);
    const el = this._lineEls.get(line);
    if (el) {
      el.classList.add('gpulab-match-current');
      const mark = el.querySelector('.gpulab-mark') as HTMLElement | null;
      if (mark) {
        this._revealX(el, mark);
      }
    }
    this._updateCount();
  }

  private _updateCount(): void {
    const n = this._matches.length;
    let label = '';
    if (this._query) {
      label = n === 0 ? 'no match' : this._current >= 0 ? `${this._current + 1}/${n}` : `${n}`;
    }
    this._searchCount.textContent = label;
    this.node.classList.toggle('gpulab-no-match', Boolean(this._query) && n === 0);
  }

  // ---- copy --------------------------------------------------------------

  private _onCopy = (): void => {
    void this.copy();
  };

  /** Copy the pane's text to the clipboard; resolves to success. */
  async copy(): Promise<boolean> {
    const text = this._pane.text;
    let ok = false;
    const clip = this._doc.defaultView?.navigator?.clipboard;
    if (clip && typeof clip.writeText === 'function') {
      try {
        await clip.writeText(text);
        ok = true;
      } catch {
        ok = false;
      }
    }
    if (!ok) {
      ok = this._copyFallback(text);
    }
    this._flashCopy(ok ? 'Copied' : 'Copy failed');
    return ok;
  }

  private _copyFallback(text: string): boolean {
    const doc = this._doc;
    const area = h(doc, 'textarea', 'gpulab-copy-area');
    area.value = text;
    area.setAttribute('readonly', '');
    area.style.position = 'fixed';
    area.style.opacity = '0';
    area.style.left = '-10000px';
    (doc.body ?? doc.documentElement).appendChild(area);
    try {
      area.select();
      return typeof doc.execCommand === 'function' && doc.execCommand('copy');
    } catch {
      return false;
    } finally {
      area.remove();
    }
  }

  private _flashCopy(label: string): void {
    const b = this._copyButton;
    b.textContent = label;
    b.classList.add('gpulab-copied');
    if (this._copyTimer !== null) {
      clearTimeout(this._copyTimer);
    }
    this._copyTimer = setTimeout(() => {
      this._copyTimer = null;
      b.textContent = 'Copy';
      b.classList.remove('gpulab-copied');
    }, 1200);
  }
}

type Variant = 'main' | 'compare';

interface ISelection {
  pane: string;
  line: number;
}

/**
 * The whole build view. `render(data)` takes the bundle as JSON (anything:
 * it is checked) and (re)builds the DOM under `node`.
 */
export class BuildView implements IPaneHost {
  readonly node: HTMLElement;
  map: LineMap = new LineMap(null);
  analysis: IAnalysisView = analysisView(null);
  measured: IMeasuredView = measuredView(null, null);

  private readonly _doc: Doc;
  private _bundle: IBundle | null = null;
  private _variant: Variant = 'main';
  private _panes: PaneView[] = [];
  private _selection: ISelection | null = null;
  private _pinned = false;
  private _panesEl: HTMLElement | null = null;
  private readonly _hidden = new Set<string>();
  /** Whether the user has toggled a pane: until then the view's width picks the panes (layout.ts). */
  private _chosen = false;
  private _resizeObserver: ResizeObserver | null = null;
  private _expanded = false;
  private readonly _host: IBuildHost | null;
  private _controls: IControls | null = null;
  private _controlsEl: HTMLElement | null = null;
  private _diffEl: HTMLElement | null = null;

  /** `host`: the kernel of a live view (widget.ts), which rebuilds; none for a saved output. */
  constructor(doc: Doc = document, host: IBuildHost | null = null) {
    this._doc = doc;
    this._host = host;
    const node = h(doc, 'div', 'gpulab-build');
    // Focusable parts (search boxes, buttons) must not trigger notebook
    // command-mode shortcuts such as `d d`.
    node.setAttribute('data-lm-suppress-shortcuts', 'true');
    node.addEventListener('keydown', this._onKeyDown);
    this.node = node;
    const RO = (doc.defaultView as (Window & typeof globalThis) | null)?.ResizeObserver;
    if (RO) {
      this._resizeObserver = new RO(() => this._fitPanes());
      this._resizeObserver.observe(node);
    }
  }

  /** Until the user toggles a pane, show the panes that fit the view's width (`firstHidden`). */
  private _fitPanes(): void {
    const b = this.shown;
    if (this._chosen || !b) {
      return;
    }
    const hide = firstHidden(b.panes.map(p => p.id), this.node.getBoundingClientRect().width);
    if (hide.length === this._hidden.size && hide.every(id => this._hidden.has(id))) {
      return;
    }
    this._hidden.clear();
    hide.forEach(id => this._hidden.add(id));
    this._showPanes();
  }

  /**
   * N / Shift+N: the next or previous linked line, in the focused pane when it has
   * linked lines, else in the last shown pane that has (the SASS, most often).
   */
  private _stepByKey(target: HTMLElement | null, direction: 1 | -1): void {
    const focused = (target?.closest('.gpulab-pane') as HTMLElement | null)?.dataset.pane;
    const shown = this._panes.filter(p => !this._hidden.has(p.id) && p.linked.size > 0);
    const pane = shown.find(p => p.id === focused) ?? shown[shown.length - 1];
    pane?.stepLinked(direction);
  }

  /** The bundle currently shown (main or compare), normalized. */
  get shown(): IBundle | null {
    if (!this._bundle) {
      return null;
    }
    return this._variant === 'compare' && this._bundle.compare
      ? this._bundle.compare
      : this._bundle;
  }

  get variant(): Variant {
    return this._variant;
  }

  get panes(): readonly PaneView[] {
    return this._panes;
  }

  pane(id: string): PaneView | undefined {
    return this._panes.find(p => p.id === id);
  }

  get selection(): ISelection | null {
    return this._selection;
  }

  get pinned(): boolean {
    return this._pinned;
  }

  /** Show a new bundle (the main build). */
  render(data: unknown): void {
    this._bundle = normalizeBundle(data);
    this._variant = 'main';
    this._draw();
  }

  /** Show what the kernel offers and is doing (a live view only): the build bar and the diff pane. */
  setControls(controls: IControls | null): void {
    this._controls = controls;
    this._drawControls();
  }

  private _drawControls(): void {
    const b = this.shown;
    const host = this._host;
    const bar = b && host && this._controls ? controlsBar(this._doc, this._controls, b.target, b.options, host) : null;
    const row = this.node.querySelector('.gpulab-header > .gpulab-layout');
    if (this._controlsEl) {
      this._controlsEl.remove();
    }
    this._controlsEl = bar;
    if (bar && row) {
      row.after(bar);
    }
    this._diffEl?.remove();
    this._diffEl = host && this._controls ? diffPane(this._doc, this._controls, host) : null;
    if (this._diffEl) {
      this.node.appendChild(this._diffEl);
    }
  }

  /** Switch between the main build and its `compare` build. */
  showVariant(v: Variant): void {
    if (v === this._variant || !this._bundle) {
      return;
    }
    if (v === 'compare' && !this._bundle.compare) {
      return;
    }
    this._variant = v;
    this._draw();
  }

  dispose(): void {
    this._clearPanes();
    this._resizeObserver?.disconnect();
    this._resizeObserver = null;
    this.node.removeEventListener('keydown', this._onKeyDown);
    this.node.textContent = '';
  }

  private _clearPanes(): void {
    for (const p of this._panes) {
      p.dispose();
    }
    this._panes = [];
    if (this._panesEl) {
      this._panesEl.removeEventListener('mouseover', this._onMouseOver);
      this._panesEl.removeEventListener('mouseleave', this._onMouseLeave);
      this._panesEl.removeEventListener('click', this._onClick);
      this._panesEl = null;
    }
    this._selection = null;
    this._pinned = false;
  }

  private _draw(): void {
    const doc = this._doc;
    this._clearPanes();
    this.node.textContent = '';
    this.node.classList.remove('gpulab-has-pin', 'gpulab-selecting');
    const b = this.shown;
    if (!b) {
      this.node.appendChild(
        h(doc, 'div', 'gpulab-error', 'gpulab: this output is not a build bundle.')
      );
      return;
    }
    this.node.dataset.variant = this._variant;
    this.node.dataset.lto = b.lto ? 'on' : 'off';
    this.map = new LineMap(b.links);
    this.analysis = b.analysis ?? analysisView(null);
    this.measured = b.measured ?? measuredView(null, null);
    this.node.appendChild(this._header(b));

    const panesEl = h(doc, 'div', 'gpulab-panes');
    for (const p of b.panes) {
      const view = new PaneView(doc, p, this);
      this._panes.push(view);
      panesEl.appendChild(view.node);
    }
    if (b.panes.length === 0) {
      panesEl.appendChild(h(doc, 'div', 'gpulab-empty', 'No panes to show.'));
    }
    panesEl.addEventListener('mouseover', this._onMouseOver);
    panesEl.addEventListener('mouseleave', this._onMouseLeave);
    panesEl.addEventListener('click', this._onClick);
    this._panesEl = panesEl;
    this._placeSplitters();
    this.node.appendChild(panesEl);
    this._fitPanes();
    this._drawControls();
  }

  // ---- header ------------------------------------------------------------

  private _header(b: IBundle): HTMLElement {
    const doc = this._doc;
    const header = h(doc, 'div', 'gpulab-header');

    const model = b.header;
    const row = h(doc, 'div', 'gpulab-title-row');
    row.appendChild(h(doc, 'span', 'gpulab-name', model.title || '(unnamed)'));
    for (const c of model.chips) {
      const chip = h(doc, 'span', 'gpulab-chip', c.text);
      chip.dataset.field = c.field;
      chip.title = c.title;
      if (c.tone) {
        chip.dataset.tone = c.tone;
      }
      row.appendChild(chip);
    }
    if (model.options) {
      row.appendChild(h(doc, 'span', 'gpulab-options', model.options));
    }
    if (this._bundle && this._bundle.version > 1) {
      const chip = h(doc, 'span', 'gpulab-chip', `bundle v${this._bundle.version}`);
      chip.dataset.field = 'version';
      chip.title = 'newer bundle version than this renderer knows';
      row.appendChild(chip);
    }

    // Toggle between this build and the compare build.
    const main = this._bundle as IBundle;
    if (main.compare) {
      const group = h(doc, 'div', 'gpulab-compare-toggle');
      group.setAttribute('role', 'group');
      group.setAttribute('aria-label', 'Build shown');
      const button = (v: Variant, bb: IBundle): HTMLButtonElement => {
        const calls = bb.stats?.sass_calls;
        const label =
          (bb.lto ? 'LTO' : 'PTX-linked') +
          (calls !== undefined ? ` · ${plural(calls, 'CALL')}` : '');
        const btn = h(doc, 'button', 'gpulab-variant', label);
        btn.type = 'button';
        btn.dataset.variant = v;
        btn.setAttribute('aria-pressed', String(v === this._variant));
        btn.classList.toggle('gpulab-variant-active', v === this._variant);
        btn.title =
          v === 'main' ? 'Show the main build' : 'Show the build linked the other way';
        btn.addEventListener('click', () => this.showVariant(v));
        return btn;
      };
      group.append(button('main', main), button('compare', main.compare));
      row.appendChild(group);
    }
    header.appendChild(row);
    header.appendChild(this._layoutBar(b));

    // The kernel table: every column of the model.
    const { columns, rows } = model.kernels;
    if (rows.length) {
      const wrap = h(doc, 'div', 'gpulab-resources-wrap');
      const table = h(doc, 'table', 'gpulab-resources');
      const thead = h(doc, 'thead');
      const hr = h(doc, 'tr');
      for (const [, title] of columns) {
        hr.appendChild(h(doc, 'th', undefined, title));
      }
      thead.appendChild(hr);
      const tbody = h(doc, 'tbody');
      for (const r of rows) {
        const tr = h(doc, 'tr');
        tr.dataset.kernel = r.kernel;
        for (const [field] of columns) {
          const td = h(doc, 'td', undefined, r.cells[field] ?? '–');
          td.dataset.field = field;
          td.classList.toggle('gpulab-warn', r.warn.includes(field));
          tr.appendChild(td);
        }
        tbody.appendChild(tr);
      }
      table.append(thead, tbody);
      wrap.appendChild(table);
      header.appendChild(wrap);
    }

    // Stage timings, `total` last; or, for a cached build, where it came from (its timings are of its first build).
    if (model.build) {
      const t = h(doc, 'div', 'gpulab-timings gpulab-cached');
      t.append(h(doc, 'span', 'gpulab-timings-label', 'build'), h(doc, 'span', 'gpulab-provenance', model.build));
      t.title = 'Stage timings of that build: ' + model.timings.map(([stage, text]) => `${stage} ${text}`).join(', ');
      header.appendChild(t);
    } else if (model.timings.length) {
      const t = h(doc, 'div', 'gpulab-timings');
      t.appendChild(h(doc, 'span', 'gpulab-timings-label', 'stages'));
      for (const [stage, text] of model.timings) {
        const e = h(doc, 'span', stage === 'total' ? 'gpulab-timing gpulab-timing-total' : 'gpulab-timing');
        e.dataset.stage = stage;
        e.append(h(doc, 'span', 'gpulab-timing-stage', stage), doc.createTextNode(' '),
          h(doc, 'span', 'gpulab-timing-value', text));
        t.appendChild(e);
      }
      header.appendChild(t);
    }

    const measured = measuredHeader(this._doc, this.measured, (el, key) => this._linkToLine(el, key));
    if (measured) {
      header.appendChild(measured);
    }
    this._findings(header, model);

    header.appendChild(
      h(
        doc,
        'div',
        'gpulab-hint',
        'Hover a line to see it in the other panes; click to pin, click again or Esc to unpin.'
      )
    );
    return header;
  }

  // ---- layout: which panes show, their widths, expanded -------------------

  /** Pane toggles (show any of them, two at a time, one alone) and the expand button. */
  private _layoutBar(b: IBundle): HTMLElement {
    const doc = this._doc;
    const bar = h(doc, 'div', 'gpulab-layout');
    const group = h(doc, 'div', 'gpulab-pane-toggles');
    group.setAttribute('role', 'group');
    group.setAttribute('aria-label', 'Panes shown');
    group.appendChild(h(doc, 'span', 'gpulab-timings-label', 'panes'));
    for (const p of b.panes) {
      const btn = h(doc, 'button', 'gpulab-pane-toggle', p.title);
      btn.type = 'button';
      btn.dataset.pane = p.id;
      btn.title = `Show or hide the ${p.title} pane`;
      btn.setAttribute('aria-pressed', String(!this._hidden.has(p.id)));
      btn.addEventListener('click', () => this.togglePane(p.id));
      group.appendChild(btn);
    }
    const expand = h(doc, 'button', 'gpulab-expand', this._expanded ? 'Restore' : 'Expand');
    expand.type = 'button';
    expand.title = 'Fill the window with this view (Esc to restore)';
    expand.setAttribute('aria-pressed', String(this._expanded));
    expand.addEventListener('click', () => this.setExpanded(!this._expanded));
    bar.append(group, expand);
    return bar;
  }

  /** Ids of the panes hidden by their toggles. */
  get hidden(): ReadonlySet<string> {
    return this._hidden;
  }

  /** Show or hide pane `id` (the last one shown stays); from then on the user's choice holds. */
  togglePane(id: string): void {
    this._chosen = true;
    if (this._hidden.has(id)) {
      this._hidden.delete(id);
    } else if (this._panes.filter(p => !this._hidden.has(p.id)).length > 1) {
      this._hidden.add(id);
    }
    this._showPanes();
  }

  /** Show the panes that are not hidden, their toggles pressed, with splitters between them. */
  private _showPanes(): void {
    this.node.querySelectorAll('.gpulab-pane-toggle').forEach(btn => {
      const e = btn as HTMLElement;
      e.setAttribute('aria-pressed', String(!this._hidden.has(e.dataset.pane ?? '')));
    });
    this._placeSplitters();
  }

  /** Fill the window with the view, or put it back in its cell. */
  setExpanded(on: boolean): void {
    this._expanded = on;
    this.node.classList.toggle('gpulab-expanded', on);
    const btn = this.node.querySelector('.gpulab-expand');
    if (btn) {
      btn.textContent = on ? 'Restore' : 'Expand';
      btn.setAttribute('aria-pressed', String(on));
    }
  }

  get expanded(): boolean {
    return this._expanded;
  }

  /** One splitter between each two panes that show. */
  private _placeSplitters(): void {
    const el = this._panesEl;
    if (!el) {
      return;
    }
    el.querySelectorAll('.gpulab-splitter').forEach(e => e.remove());
    const shown = this._panes.filter(p => !this._hidden.has(p.id));
    for (const p of this._panes) {
      p.node.hidden = this._hidden.has(p.id);
    }
    for (let k = 1; k < shown.length; k++) {
      const sp = h(this._doc, 'div', 'gpulab-splitter');
      sp.setAttribute('role', 'separator');
      sp.setAttribute('aria-orientation', 'vertical');
      sp.setAttribute('aria-label', `Resize ${shown[k - 1].pane.title} and ${shown[k].pane.title}`);
      sp.tabIndex = 0;
      sp.title = 'Drag (or focus and press ← →) to share the width of the panes beside it';
      sp.addEventListener('pointerdown', event => this._drag(event, shown[k - 1], shown[k], sp));
      sp.addEventListener('keydown', event => {
        if (event.key === 'ArrowLeft' || event.key === 'ArrowRight') {
          event.preventDefault();
          this._resize(shown[k - 1], shown[k], event.key === 'ArrowLeft' ? -SPLIT_STEP_PX : SPLIT_STEP_PX);
        }
      });
      el.insertBefore(sp, shown[k].node);
    }
  }

  /** Freeze every shown pane's width as its flex share (from no basis); return the two beside a splitter. */
  private _widths(left: PaneView, right: PaneView): [number, number] {
    // Measure every pane before changing any: a change reflows the others.
    const shown = this._panes.filter(p => !this._hidden.has(p.id));
    const widths = shown.map(p => p.node.getBoundingClientRect().width || 1);
    shown.forEach((p, i) => (p.node.style.flex = `${widths[i]} 1 0px`));
    return [Number(left.node.style.flexGrow), Number(right.node.style.flexGrow)];
  }

  private _resize(left: PaneView, right: PaneView, dx: number, from?: [number, number]): void {
    const [w1, w2] = from ?? this._widths(left, right);
    const move = Math.max(-(w1 - MIN_PANE_PX), Math.min(w2 - MIN_PANE_PX, dx));
    left.node.style.flexGrow = String(w1 + move);
    right.node.style.flexGrow = String(w2 - move);
  }

  private _drag(event: PointerEvent, left: PaneView, right: PaneView, sp: HTMLElement): void {
    event.preventDefault();
    const from = this._widths(left, right);
    const x0 = event.clientX;
    sp.classList.add('gpulab-dragging');
    sp.setPointerCapture?.(event.pointerId);
    const move = (e: PointerEvent): void => this._resize(left, right, e.clientX - x0, from);
    const up = (): void => {
      sp.classList.remove('gpulab-dragging');
      sp.removeEventListener('pointermove', move);
      sp.removeEventListener('pointerup', up);
      sp.removeEventListener('pointercancel', up);
    };
    sp.addEventListener('pointermove', move);
    sp.addEventListener('pointerup', up);
    sp.addEventListener('pointercancel', up);
  }

  /** Each kernel's registers and occupancy, then the diagnostics with their fixes; hover one to see its line. */
  private _findings(header: HTMLElement, model: IBundle['header']): void {
    const doc = this._doc;
    for (const p of model.pressure) {
      const row = h(doc, 'div', 'gpulab-registers');
      row.append(h(doc, 'span', 'gpulab-timings-label', 'registers'), h(doc, 'b', undefined, p.kernel),
        doc.createTextNode(` ${p.text}`));
      this._linkToLine(row, p.key);
      header.appendChild(row);
    }
    if (!model.diagnostics.length) {
      return;
    }
    const list = h(doc, 'ul', 'gpulab-diagnostics');
    for (const d of model.diagnostics) {
      const item = h(doc, 'li', 'gpulab-diagnostic');
      item.dataset.kind = d.kind;
      item.dataset.severity = d.severity;
      item.append(h(doc, 'span', 'gpulab-diagnostic-kind', d.kind), doc.createTextNode(` ${d.message} `),
        h(doc, 'span', 'gpulab-diagnostic-fix', `Fix: ${d.fix}`));
      this._linkToLine(item, d.key);
      list.appendChild(item);
    }
    header.appendChild(list);
  }

  /** Hovering `el` selects the Python line of `key` (`py:N`); a click pins it. */
  private _linkToLine(el: HTMLElement, key: string | null): void {
    if (!key) {
      return;
    }
    const sel = { pane: 'python', line: Number(key.slice(3)) - 1 };
    el.dataset.key = key;
    el.classList.add('gpulab-to-line');
    el.addEventListener('mouseenter', () => !this._pinned && this.select(sel));
    el.addEventListener('mouseleave', () => !this._pinned && this.select(null));
    el.addEventListener('click', () => this.select(sel, true));
  }

  // ---- selection ---------------------------------------------------------

  /**
   * Select line `line` of pane `pane` (null: clear): it becomes active, every
   * line of the other panes that shares a key with it is linked, and each
   * other pane scrolls to show one of them.
   */
  select(sel: ISelection | null, pin = false): void {
    const same =
      sel !== null &&
      this._selection !== null &&
      sel.pane === this._selection.pane &&
      sel.line === this._selection.line;
    this._pinned = pin && sel !== null;
    this.node.classList.toggle('gpulab-has-pin', this._pinned);
    if (same) {
      this.pane(sel.pane)?.setActive(sel.line, this._pinned);
      return;
    }
    if (sel === null && this._selection === null) {
      return;
    }
    this._selection = sel;
    this.node.classList.toggle('gpulab-selecting', sel !== null);
    const cps = sel ? this.map.counterparts(sel.pane, sel.line) : new Map<string, number[]>();
    // A Python line names the CUDA lines it was inlined at, and every instruction there shares them:
    // the argument loads, the stores, their address arithmetic. In PTX and SASS, light what came from
    // the line itself (its py: key); what was inlined along with it only faintly.
    const own =
      sel && sel.pane === 'python'
        ? this.map.counterparts(sel.pane, sel.line, false, key => key.startsWith('py:'))
        : cps;
    for (const p of this._panes) {
      p.setActive(sel && sel.pane === p.id ? sel.line : null, this._pinned);
      const all = cps.get(p.id) ?? [];
      const lines = p.id === 'cuda' ? all : own.get(p.id) ?? [];
      const strong = new Set(lines);
      p.setLinked(lines, all.filter(i => !strong.has(i)));
      if (sel && p.id !== sel.pane && lines.length) {
        p.reveal(lines);
      }
    }
  }

  private _lineAt(target: EventTarget | null): ISelection | null {
    const t = target as Element | null;
    if (!t || typeof t.closest !== 'function') {
      return null;
    }
    const line = t.closest('.gpulab-line') as HTMLElement | null;
    const pane = line?.closest('.gpulab-pane') as HTMLElement | null;
    if (!line || !pane || !this.node.contains(pane)) {
      return null;
    }
    return { pane: pane.dataset.pane ?? '', line: Number(line.dataset.line) };
  }

  private _onMouseOver = (event: MouseEvent): void => {
    if (this._pinned) {
      return;
    }
    const sel = this._lineAt(event.target);
    if (sel) {
      this.select(sel);
    }
  };

  private _onMouseLeave = (): void => {
    if (!this._pinned) {
      this.select(null);
    }
  };

  private _onClick = (event: MouseEvent): void => {
    const sel = this._lineAt(event.target);
    if (!sel) {
      return;
    }
    // A drag that selected text is not a click on a line.
    const picked = this._doc.defaultView?.getSelection?.();
    if (picked && !picked.isCollapsed && picked.toString().length > 0) {
      return;
    }
    const cur = this._selection;
    if (this._pinned && cur && cur.pane === sel.pane && cur.line === sel.line) {
      this.select(sel, false); // unpin, keep it as the hovered line
    } else {
      this.select(sel, true);
    }
  };

  private _onKeyDown = (event: KeyboardEvent): void => {
    const target = event.target as HTMLElement | null;
    if (event.key.toLowerCase() === 'n' && !event.ctrlKey && !event.metaKey && !event.altKey &&
        target?.tagName !== 'INPUT') {
      this._stepByKey(target, event.shiftKey ? -1 : 1);
      event.preventDefault();
      return;
    }
    if (event.key === 'Escape' && this._expanded && !this._pinned) {
      this.setExpanded(false);
      return;
    }
    if (event.key === 'Escape' && this._pinned) {
      const t = event.target as HTMLElement | null;
      if (t && t.tagName === 'INPUT') {
        return;
      }
      this.select(null);
    }
  };
}
