/**
 * Which panes a build view shows first: every pane where four fit a row,
 * else the Python and the SASS side by side (the others one click away).
 *
 * Mirrors `gpulab/display/layout.py` (`test/layout.test.ts` checks that).
 */
export const ALL_PANES: readonly string[] = Object.freeze(['python', 'cuda', 'ptx', 'sass']);
export const FIRST_PANES: readonly string[] = Object.freeze(['python', 'sass']);
/** Narrowest view (px) whose row holds four panes with their lines whole. */
export const ALL_PANES_PX = 1500;

/**
 * The panes a view `width` px wide (0: not laid out yet) hides at first, of `panes`.
 * Only the default four-pane view narrows; panes a user chose (`--show`) all show.
 */
export function firstHidden(panes: readonly string[], width: number): string[] {
  const all = [...panes].sort().join() === [...ALL_PANES].sort().join();
  if (width <= 0 || width >= ALL_PANES_PX || !all) {
    return [];
  }
  return panes.filter(p => !FIRST_PANES.includes(p));
}
