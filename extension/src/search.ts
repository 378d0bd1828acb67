/**
 * Plain-text search within a pane (case-insensitive, no regular
 * expressions). Pure functions over the pane's lines.
 */

/** Lowercased copy of `lines`, computed once per pane and reused. */
export function foldLines(lines: readonly string[]): string[] {
  return lines.map(l => l.toLowerCase());
}

/** Sorted indices of the lines that contain `query` (case-insensitive). */
export function findLines(folded: readonly string[], query: string): number[] {
  const q = query.toLowerCase();
  const out: number[] = [];
  if (!q) {
    return out;
  }
  for (let i = 0; i < folded.length; i++) {
    if (folded[i].includes(q)) {
      out.push(i);
    }
  }
  return out;
}

/** Non-overlapping [from, to) ranges of `query` in `line` (case-insensitive). */
export function matchRanges(line: string, query: string): [number, number][] {
  const out: [number, number][] = [];
  const q = query.toLowerCase();
  if (!q) {
    return out;
  }
  const l = line.toLowerCase();
  // toLowerCase can change the length of some characters (e.g. U+0130);
  // fall back to no marks rather than mis-placed ones.
  if (l.length !== line.length) {
    return out;
  }
  let i = l.indexOf(q);
  while (i !== -1) {
    out.push([i, i + q.length]);
    i = l.indexOf(q, i + q.length);
  }
  return out;
}

/**
 * Index into sorted `matches` of the match to go to from line `current`:
 * the next one after it (or before it when `backwards`), wrapping around.
 * `current` null means "start": the first (or last) match. -1 if none.
 */
export function nextMatch(
  matches: readonly number[],
  current: number | null,
  backwards = false
): number {
  const n = matches.length;
  if (n === 0) {
    return -1;
  }
  if (current === null) {
    return backwards ? n - 1 : 0;
  }
  if (backwards) {
    for (let i = n - 1; i >= 0; i--) {
      if (matches[i] < current) {
        return i;
      }
    }
    return n - 1;
  }
  // Binary search the first match after current.
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (matches[mid] <= current) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < n ? lo : 0;
}
