/**
 * Colours shared by every gpulab view.
 *
 * Mirrors `gpulab/display/palette.py`: line `py:N` of a build takes
 * `PALETTE[(N - 1) % PALETTE.length]` (Python's non-negative modulo).
 * Keep the two lists identical; `test/palette.test.ts` checks that.
 */
export const PALETTE: readonly string[] = Object.freeze([
  '#e6194b33',
  '#3cb44b33',
  '#4363d833',
  '#f5823133',
  '#911eb433',
  '#42d4f433',
  '#f032e633',
  '#bfef4533',
  '#46999033',
  '#9a632433',
  '#80000033',
  '#00007533'
]);

/** Background colour of 1-based Python pane line `pythonLine`. */
export function colourOf(pythonLine: number): string {
  const n = PALETTE.length;
  const i = (((pythonLine - 1) % n) + n) % n;
  return PALETTE[i];
}
