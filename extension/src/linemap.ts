/**
 * Pure line-map logic for the build view: which keys each line carries,
 * which lines share a key, and which colour a line takes.
 *
 * A key names one source line: `py:N` is line N (1-based) of the Python
 * pane, `cu:N` line N of the CUDA pane. Lines that share a key are the same
 * source line seen at different stages (docs/bundle.md).
 *
 * No DOM here: everything is plain data in Maps so that it can be unit
 * tested and stays fast on panes of tens of thousands of lines.
 */
import { colourOf } from './palette';

/** links[pane]["<0-based line>"] -> keys, as in the bundle. */
export type LinksInput = Record<string, Record<string, readonly string[]>>;

/** For each pane, the sorted 0-based line indices. */
export type PaneLines = Map<string, number[]>;

/**
 * Split pane text into lines the way Python's `str.splitlines()` does for
 * `\n` and `\r\n` endings: a trailing newline does not start an extra line,
 * and the empty text has no lines.
 */
export function splitLines(text: string): string[] {
  if (text === '') {
    return [];
  }
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') {
    lines.pop();
  }
  for (let i = 0; i < lines.length; i++) {
    const s = lines[i];
    if (s.length && s.charCodeAt(s.length - 1) === 13) {
      lines[i] = s.slice(0, -1);
    }
  }
  return lines;
}

/** `py:12` -> 12; anything else -> null. */
export function pyLineOfKey(key: string): number | null {
  if (!key.startsWith('py:')) {
    return null;
  }
  const rest = key.slice(3);
  if (!/^-?\d+$/.test(rest)) {
    return null;
  }
  return parseInt(rest, 10);
}

/** The Python line named by the first `py:N` key of `keys`, or null. */
export function firstPyLine(keys: readonly string[]): number | null {
  for (const k of keys) {
    const n = pyLineOfKey(k);
    if (n !== null) {
      return n;
    }
  }
  return null;
}

/** The palette colour for a line with `keys`, or null if it has no `py:N` key. */
export function colourForKeys(keys: readonly string[]): string | null {
  const n = firstPyLine(keys);
  return n === null ? null : colourOf(n);
}

const EMPTY: readonly string[] = Object.freeze([]);

export class LineMap {
  /** pane -> line -> keys (deduplicated, in bundle order). */
  private readonly _keys = new Map<string, Map<number, readonly string[]>>();
  /** key -> pane -> sorted lines. */
  private readonly _index = new Map<string, PaneLines>();

  constructor(links: LinksInput | null | undefined) {
    if (!links) {
      return;
    }
    for (const pane of Object.keys(links)) {
      const byLine = links[pane];
      if (!byLine || typeof byLine !== 'object') {
        continue;
      }
      const entries: [number, readonly string[]][] = [];
      for (const lineStr of Object.keys(byLine)) {
        if (!/^\d+$/.test(lineStr)) {
          continue;
        }
        const keys = byLine[lineStr];
        if (!Array.isArray(keys) || keys.length === 0) {
          continue;
        }
        const uniq = Array.from(new Set(keys.filter(k => typeof k === 'string')));
        if (uniq.length) {
          entries.push([parseInt(lineStr, 10), Object.freeze(uniq)]);
        }
      }
      // Sorted insertion keeps every index list sorted without a later sort.
      entries.sort((a, b) => a[0] - b[0]);
      const m = new Map<number, readonly string[]>();
      for (const [line, keys] of entries) {
        m.set(line, keys);
        for (const key of keys) {
          let panes = this._index.get(key);
          if (!panes) {
            panes = new Map();
            this._index.set(key, panes);
          }
          let lines = panes.get(pane);
          if (!lines) {
            lines = [];
            panes.set(pane, lines);
          }
          lines.push(line);
        }
      }
      this._keys.set(pane, m);
    }
  }

  /** Panes that have link entries. */
  get panes(): string[] {
    return Array.from(this._keys.keys());
  }

  /** Every key that occurs, in first-seen order. */
  get keys(): string[] {
    return Array.from(this._index.keys());
  }

  /** Keys of 0-based line `line` of `pane` (empty when it has no source line). */
  keysOf(pane: string, line: number): readonly string[] {
    return this._keys.get(pane)?.get(line) ?? EMPTY;
  }

  /** Lines (0-based, sorted) carrying `key`, per pane. */
  linesOfKey(key: string): ReadonlyMap<string, readonly number[]> {
    return this._index.get(key) ?? new Map();
  }

  /** Python line named by the first `py:N` key of the line, or null. */
  pyLineOf(pane: string, line: number): number | null {
    return firstPyLine(this.keysOf(pane, line));
  }

  /** Background colour of the line from the palette, or null (not coloured). */
  colourOf(pane: string, line: number): string | null {
    return colourForKeys(this.keysOf(pane, line));
  }

  /** Sorted lines of `pane` that have at least one key. */
  linkedLines(pane: string): number[] {
    return Array.from(this._keys.get(pane)?.keys() ?? []);
  }

  /**
   * Lines that share any key with line `line` of `pane`: pane -> sorted,
   * deduplicated 0-based lines. The line's own pane is left out unless
   * `includeOwnPane` (then the line itself is left out but its siblings in
   * that pane are listed). Panes with no counterpart are absent.
   */
  counterparts(
    pane: string,
    line: number,
    includeOwnPane = false,
    keep: (key: string) => boolean = () => true
  ): Map<string, number[]> {
    const keys = this.keysOf(pane, line).filter(keep);
    const sets = new Map<string, Set<number>>();
    for (const key of keys) {
      const panes = this._index.get(key);
      if (!panes) {
        continue;
      }
      for (const [p, lines] of panes) {
        if (p === pane && !includeOwnPane) {
          continue;
        }
        let s = sets.get(p);
        if (!s) {
          s = new Set();
          sets.set(p, s);
        }
        for (const l of lines) {
          if (!(p === pane && l === line)) {
            s.add(l);
          }
        }
      }
    }
    const out = new Map<string, number[]>();
    for (const [p, s] of sets) {
      if (s.size) {
        out.set(
          p,
          Array.from(s).sort((a, b) => a - b)
        );
      }
    }
    return out;
  }
}

/**
 * Among sorted `lines`, the one to scroll to so that a pane whose visible
 * window is [first, last] shows a counterpart: null if one is already
 * visible, else the first line below the window, else the last one above.
 */
export function scrollTarget(
  lines: readonly number[],
  first: number,
  last: number
): number | null {
  if (lines.length === 0) {
    return null;
  }
  const i = lowerBound(lines, first);
  if (i < lines.length && lines[i] <= last) {
    return null;
  }
  if (i < lines.length) {
    return lines[i];
  }
  return lines[lines.length - 1];
}

/** First index i of sorted `a` with a[i] >= x. */
export function lowerBound(a: readonly number[], x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < x) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}
