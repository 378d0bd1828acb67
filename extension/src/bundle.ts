/**
 * The build bundle, MIME type `application/vnd.gpulab.build+json`
 * (see docs/bundle.md). Every string in it is user or compiler text.
 */
import { IAnalysisView, analysisView } from './analysis';
import { IMeasuredView, measuredView } from './measured';

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

export interface IStats {
  sass_instructions?: number;
  sass_calls?: number;
  ptx_lines?: number;
  [k: string]: number | undefined;
}

/** One labelled fact of the header (docs/bundle.md, `header.chips`). */
export interface IHeaderChip {
  field: string;
  text: string;
  title: string;
  /** '' | 'on' | 'off' | 'warn' */
  tone: string;
}

/**
 * The header model: everything the header shows, already formatted as text
 * by gpulab (`gpulab.compiler.bundle.header_of`). The Python renderings draw
 * the same model, so a field added there shows here with no change.
 */
export interface IHeader {
  title: string;
  chips: IHeaderChip[];
  options: string;
  kernels: {
    /** [field, column title] */
    columns: [string, string][];
    rows: { kernel: string; cells: Record<string, string>; warn: string[] }[];
  };
  /** [stage, text] in pipeline order, `total` last. */
  timings: [string, string][];
  /**
   * Where a cached build came from ("from the disk cache (built in 1.80 s on ...)"), shown instead of
   * its timings, which are of its first build; null for a build made just now.
   */
  build: string | null;
  /** Per kernel: registers and occupancy as one line, and where the pressure peaks. */
  pressure: { kernel: string; text: string; key: string | null }[];
  /** What costs time, each naming its Python line (`key`, `py:N`) with its fix. */
  diagnostics: IDiagnostic[];
}

export interface IDiagnostic {
  kind: string;
  severity: string;
  key: string | null;
  line: string;
  message: string;
  fix: string;
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
  stats?: IStats;
  header: IHeader;
  /** Drawn from the bundle's `analysis` (empty without one). */
  analysis?: IAnalysisView;
  /** Drawn from the bundle's `measured` and its header's (empty without one). */
  measured?: IMeasuredView;
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
  return {
    header: normalizeHeader(data.header, str(data.name)),
    analysis: analysisView(data.analysis),
    measured: measuredView(data.measured, isObject(data.header) ? data.header.measured : null),
    version: typeof data.version === 'number' ? data.version : 1,
    name: str(data.name),
    primitive: str(data.primitive),
    target: str(data.target),
    lto: data.lto === true,
    key: str(data.key),
    options: isObject(data.options) ? data.options : {},
    panes,
    links,
    stats: numRecord(data.stats),
    compare: depth === 0 ? normalizeBundle(data.compare, 1) : null
  };
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.map(x => str(x)) : [];
}

function pairs(v: unknown): [string, string][] {
  return Array.isArray(v) ? v.filter(Array.isArray).map(p => [str(p[0]), str(p[1])] as [string, string]) : [];
}

function keyOf(v: unknown): string | null {
  return typeof v === 'string' && /^py:\d+$/.test(v) ? v : null;
}

/** Coerce an untrusted header model; a bundle without one (an older gpulab) gets its name only. */
export function normalizeHeader(data: unknown, name: string): IHeader {
  const header = isObject(data) ? data : {};
  const chips = Array.isArray(header.chips)
    ? header.chips.filter(isObject).map(c => ({
        field: str(c.field),
        text: str(c.text),
        title: str(c.title),
        tone: str(c.tone)
      }))
    : [];
  const kernels = isObject(header.kernels) ? header.kernels : {};
  const rows = Array.isArray(kernels.rows)
    ? kernels.rows.filter(isObject).map(r => {
        const cells: Record<string, string> = {};
        if (isObject(r.cells)) {
          for (const [k, v] of Object.entries(r.cells)) {
            cells[k] = str(v);
          }
        }
        return { kernel: str(r.kernel), cells, warn: strings(r.warn) };
      })
    : [];
  return {
    title: str(header.title, name),
    chips,
    options: str(header.options),
    kernels: { columns: pairs(kernels.columns), rows },
    timings: pairs(header.timings),
    build: typeof header.build === 'string' && header.build ? header.build : null,
    pressure: (Array.isArray(header.pressure) ? header.pressure.filter(isObject) : []).map(p => ({
      kernel: str(p.kernel),
      text: str(p.text),
      key: keyOf(p.key)
    })),
    diagnostics: (Array.isArray(header.diagnostics) ? header.diagnostics.filter(isObject) : []).map(d => ({
      kind: str(d.kind),
      severity: str(d.severity),
      key: keyOf(d.key),
      line: str(d.line),
      message: str(d.message),
      fix: str(d.fix)
    }))
  };
}
