/**
 * The build bundle, MIME type `application/vnd.gpulab.build+json`
 * (see docs/bundle.md). Every string in it is user or compiler text.
 */
export const MIME_TYPE = 'application/vnd.gpulab.build+json';

export type PaneId = 'python' | 'cuda' | 'ptx' | 'sass' | string;

export interface IPane {
  id: PaneId;
  title: string;
  language: string;
  text: string;
  first_line: number;
}

/** links[pane][0-based line index as a string] -> keys (`py:N`, `cu:N`). */
export type Links = Record<string, Record<string, readonly string[]>>;

export interface IKernelResources {
  registers?: number;
  /** Theoretical occupancy on the build's target (0-1) and the blocks per SM behind it. */
  occupancy?: number;
  blocks_per_sm?: number;
  shared_bytes?: number;
  stack_bytes?: number;
  spill_stores?: number;
  spill_loads?: number;
}

export interface IStats {
  sass_instructions?: number;
  sass_calls?: number;
  ptx_lines?: number;
  [k: string]: number | undefined;
}

export interface IBundle {
  version: number;
  name: string;
  primitive: string;
  target: string;
  lto: boolean;
  key?: string;
  options?: Record<string, unknown>;
  panes: IPane[];
  links: Links;
  resources?: Record<string, IKernelResources>;
  timings?: Record<string, number>;
  stats?: IStats;
  compare?: IBundle | null;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown, fallback = ''): string {
  return typeof v === 'string' ? v : v === undefined || v === null ? fallback : String(v);
}

/**
 * Coerce untrusted JSON into an IBundle: missing or mistyped fields become
 * empty values so that the renderer never throws on a partial bundle.
 * Returns null when `data` is not an object at all.
 */
export function normalizeBundle(data: unknown, depth = 0): IBundle | null {
  if (!isObject(data)) {
    return null;
  }
  const panes: IPane[] = [];
  if (Array.isArray(data.panes)) {
    for (const p of data.panes) {
      if (!isObject(p)) {
        continue;
      }
      const first = Number(p.first_line);
      panes.push({
        id: str(p.id),
        title: str(p.title, str(p.id)),
        language: str(p.language),
        text: str(p.text),
        first_line: Number.isFinite(first) ? Math.trunc(first) : 1
      });
    }
  }
  const links: Links = {};
  if (isObject(data.links)) {
    for (const [pane, m] of Object.entries(data.links)) {
      if (!isObject(m)) {
        continue;
      }
      const out: Record<string, string[]> = {};
      for (const [line, keys] of Object.entries(m)) {
        if (Array.isArray(keys)) {
          out[line] = keys.filter(k => typeof k === 'string') as string[];
        }
      }
      links[pane] = out;
    }
  }
  const numRecord = (v: unknown): Record<string, number> => {
    const out: Record<string, number> = {};
    if (isObject(v)) {
      for (const [k, x] of Object.entries(v)) {
        if (typeof x === 'number') {
          out[k] = x;
        }
      }
    }
    return out;
  };
  const resources: Record<string, IKernelResources> = {};
  if (isObject(data.resources)) {
    for (const [k, r] of Object.entries(data.resources)) {
      if (isObject(r)) {
        resources[k] = numRecord(r);
      }
    }
  }
  return {
    version: typeof data.version === 'number' ? data.version : 1,
    name: str(data.name),
    primitive: str(data.primitive),
    target: str(data.target),
    lto: data.lto === true,
    key: str(data.key),
    options: isObject(data.options) ? data.options : {},
    panes,
    links,
    resources,
    timings: numRecord(data.timings),
    stats: numRecord(data.stats),
    compare: depth === 0 ? normalizeBundle(data.compare, 1) : null
  };
}
