/**
 * What the view draws from a bundle's `analysis` (docs/bundle.md, "Analysis"):
 * a cost bar per Python line, a live-register bar per SASS line, and the
 * instruction guide's line for each SASS opcode and PTX instruction. The same
 * drawing as gpulab/display/gutters.py, from untrusted JSON.
 */
import { pyLineOfKey } from './linemap';

/** One Python line's SASS instructions by class, as wide (percent) as its share of the heaviest line. */
export interface ICostBar {
  title: string;
  width: number;
  /** [class id, count], most first; ids outside [a-z0-9] read as `other`. */
  segments: [string, number][];
}

/** Live registers at one SASS line, as a percent of the kernel's allocation. */
export interface IPressureBar {
  title: string;
  width: number;
  peak: boolean;
}

export interface IAnalysisView {
  costs: Map<number, ICostBar>;
  pressure: Map<number, IPressureBar>;
  /** "peak 23 live at line 60" per kernel, for the SASS pane's title bar. */
  peakNote: string;
  /** pane id (`sass`, `ptx`) -> 0-based line -> the guide's one line for its opcode. */
  hints: Map<string, Map<number, string>>;
}

const CLASS_ID = /^[a-z][a-z0-9]{0,15}$/;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function classId(v: string): string {
  return CLASS_ID.test(v) ? v : 'other';
}

function costBars(analysis: Record<string, unknown>): Map<number, ICostBar> {
  const costs = isObject(analysis.costs) ? analysis.costs : {};
  const labels = isObject(costs.labels) ? costs.labels : {};
  const rows = Array.isArray(costs.python) ? costs.python.filter(isObject) : [];
  const counted = rows.map(row => {
    const counts = new Map<string, number>();
    for (const part of [row.computes, row.supports]) {
      if (isObject(part)) {
        for (const [k, n] of Object.entries(part)) {
          const c = num(n);
          if (c) {
            counts.set(k, (counts.get(k) ?? 0) + c);
          }
        }
      }
    }
    const total = Array.from(counts.values()).reduce((a, b) => a + b, 0);
    return { row, counts, total };
  });
  const heaviest = Math.max(0, ...counted.map(c => c.total));
  const bars = new Map<number, ICostBar>();
  for (const { row, counts, total } of counted) {
    // `row.line` is the line as its file or cell numbers it; its `key` (`py:N`) finds its row of the pane.
    const line = typeof row.key === 'string' ? pyLineOfKey(row.key) : null;
    if (!total || !heaviest || line === null) {
      continue;
    }
    const sorted = Array.from(counts.entries()).sort((a, b) => b[1] - a[1]);
    const peak = num(row.peak_live);
    const title =
      `${total} SASS instruction${total === 1 ? '' : 's'}: ` +
      sorted.map(([k, n]) => `${n} ${typeof labels[k] === 'string' ? labels[k] : k}`).join(', ') +
      (peak !== null ? `; peak ${peak} live registers` : '');
    bars.set(line - 1, {
      title,
      width: Math.round((100 * total) / heaviest),
      segments: sorted.map(([k, n]) => [classId(k), n])
    });
  }
  return bars;
}

function pressureBars(analysis: Record<string, unknown>): [Map<number, IPressureBar>, string] {
  const bars = new Map<number, IPressureBar>();
  const fields = Array.isArray(analysis.sass_fields) ? analysis.sass_fields : [];
  const at = fields.indexOf('live');
  const kernels = isObject(analysis.pressure) ? Object.values(analysis.pressure).filter(isObject) : [];
  const registers = Math.max(0, ...kernels.map(k => num(k.registers) ?? 0));
  const peaks = new Set(kernels.map(k => num(k.peak_sass_line)));
  if (at < 0 || !registers || !isObject(analysis.sass)) {
    return [bars, ''];
  }
  for (const [index, row] of Object.entries(analysis.sass)) {
    const live = Array.isArray(row) ? num(row[at]) : null;
    if (live === null) {
      continue;
    }
    const line = Number(index);
    const peak = peaks.has(line);
    bars.set(line, {
      title: `${live} of ${registers} registers live${peak ? ' (the peak)' : ''}`,
      width: Math.min(100, Math.round((100 * live) / registers)),
      peak
    });
  }
  const note = kernels
    .filter(k => num(k.peak_sass_line) !== null)
    .map(k => `peak ${num(k.peak_live)} live at line ${(num(k.peak_sass_line) ?? 0) + 1}`)
    .join('; ');
  return [bars, note];
}

function opcodeHints(analysis: Record<string, unknown>): Map<string, Map<number, string>> {
  const opcodes = isObject(analysis.opcodes) ? analysis.opcodes : {};
  const guide = isObject(analysis.guide) ? analysis.guide : {};
  const out = new Map<string, Map<number, string>>();
  for (const pane of ['sass', 'ptx']) {
    const lines = isObject(opcodes[pane]) ? opcodes[pane] : {};
    const entries = isObject(guide[pane]) ? guide[pane] : {};
    const hints = new Map<number, string>();
    for (const [index, opcode] of Object.entries(lines)) {
      const op = String(opcode);
      const entry = entries[op];
      const text = isObject(entry) && typeof entry.text === 'string' ? entry.text : '';
      hints.set(Number(index), text || `${op}: not in gpulab's instruction guide`);
    }
    out.set(pane, hints);
  }
  return out;
}

/** The view's reading of a bundle's `analysis`; empty for a bundle without one. */
export function analysisView(data: unknown): IAnalysisView {
  const analysis = isObject(data) ? data : {};
  const [pressure, peakNote] = pressureBars(analysis);
  return { costs: costBars(analysis), pressure, peakNote, hints: opcodeHints(analysis) };
}
