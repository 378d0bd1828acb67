/**
 * What the view draws from a bundle's `measured` section (docs/bundle.md, "Measured"): beside each Python and
 * CUDA line its warp-stall samples as a bar in segments coloured by stall reason (the top reason on hover), a mark
 * per SASS instruction coloured by its top reason, and in the header the verdict, each launch's figures and a
 * legend. The same drawing as gpulab/display/measured.py, from untrusted JSON.
 */

/** Each stall reason's colour; mirrors gpulab/display/measured.py's COLOURS. */
export const COLOURS: Record<string, string> = {
  long_sb: '#d1242f',
  lg: '#e16f24',
  drain: '#bf8700',
  tex: '#fb8f44',
  imc: '#a40e26',
  barrier: '#8250df',
  membar: '#bf3989',
  sleep: '#6639ba',
  short_sb: '#0969da',
  mio: '#54aeff',
  wait: '#1b7c83',
  math: '#218bff',
  branch_resolving: '#0550ae',
  dispatch: '#3192aa',
  selected: '#2da44e',
  not_selected: '#8c959f',
  no_inst: '#6e7781',
  misc: '#afb8c1'
};

/** One line's samples: as wide (percent) as its share of the line with the most, in segments by reason. */
export interface IMeasuredBar {
  title: string;
  width: number;
  /** [reason id, samples], most first; ids without a colour read as `misc`. */
  segments: [string, number][];
}

export interface IMeasuredView {
  /** 0-based Python pane row -> its bar. */
  python: Map<number, IMeasuredBar>;
  /** 0-based CUDA C++ pane line -> its bar. */
  cuda: Map<number, IMeasuredBar>;
  /** 0-based SASS pane line -> its mark (one segment: the top reason). */
  sass: Map<number, IMeasuredBar>;
  /** "measured on NVIDIA H100 80GB HBM3" or "" for a bundle with nothing measured. */
  device: string;
  verdict: string;
  /** `py:N` of the Python line the verdict names, or null. */
  verdictKey: string | null;
  /** Per launch: its kernel and its figures as one line. */
  kernels: { kernel: string; text: string }[];
  /** The reasons with samples, most first: id, label, what the warp was doing. */
  legend: { id: string; label: string; description: string }[];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

function reasonId(v: string): string {
  return Object.prototype.hasOwnProperty.call(COLOURS, v) ? v : 'misc';
}

function ranked(reasons: unknown): [string, number][] {
  if (!isObject(reasons)) {
    return [];
  }
  return Object.entries(reasons)
    .map(([k, n]) => [k, num(n)] as [string, number])
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1]);
}

function title(samples: number, total: number, reasons: [string, number][], labels: Map<string, string[]>): string {
  let text = `${samples} stall sample${samples === 1 ? '' : 's'}`;
  if (total) {
    text += ` (${Math.round((100 * samples) / total)}% of the kernel's)`;
  }
  if (reasons.length) {
    const [top, count] = reasons[0];
    const [label, doing] = labels.get(top) ?? [top, ''];
    text += `; top: ${label} ${Math.round((100 * count) / samples)}%${doing ? `, ${doing}` : ''}`;
    const rest = reasons
      .slice(1, 4)
      .map(([r, n]) => `${(labels.get(r) ?? [r])[0]} ${Math.round((100 * n) / samples)}%`)
      .join(', ');
    if (rest) {
      text += `; then ${rest}`;
    }
  }
  return text;
}

/** The view's reading of a bundle's `measured` and its header's `measured`; empty for a bundle without one. */
export function measuredView(data: unknown, header: unknown): IMeasuredView {
  const measured = isObject(data) ? data : {};
  const head = isObject(header) ? header : {};
  const reasons = Array.isArray(measured.reasons) ? measured.reasons.filter(isObject) : [];
  const labels = new Map<string, string[]>(
    reasons.map(r => [String(r.id), [String(r.label ?? r.id), String(r.description ?? '')]])
  );
  const total = num(isObject(measured.total) ? measured.total.samples : 0);
  const lineBars = (data: unknown): Map<number, IMeasuredBar> => {
    const rows = Array.isArray(data) ? data.filter(isObject) : [];
    const most = Math.max(0, ...rows.map(r => num(r.samples)));
    const bars = new Map<number, IMeasuredBar>();
    for (const row of rows) {
      const samples = num(row.samples);
      // A Python line's row is its key's (py:N); a CUDA line is its own row.
      const key = typeof row.key === 'string' ? /^py:(\d+)$/.exec(row.key) : null;
      const line = key ? Number(key[1]) : num(row.line);
      if (!samples || !most || !line) {
        continue;
      }
      const found = ranked(row.reasons);
      bars.set(line - 1, {
        title: title(samples, total, found, labels),
        width: Math.round((100 * samples) / most),
        segments: found.map(([r, n]) => [reasonId(r), n])
      });
    }
    return bars;
  };
  const sass = new Map<number, IMeasuredBar>();
  const marks = isObject(measured.sass) ? Object.entries(measured.sass) : [];
  const mostMark = Math.max(0, ...marks.map(([, v]) => (Array.isArray(v) ? num(v[0]) : 0)));
  for (const [index, value] of marks) {
    if (!Array.isArray(value) || value.length !== 2 || !num(value[0]) || !mostMark) {
      continue;
    }
    const samples = num(value[0]);
    const found = ranked(value[1]);
    sass.set(Number(index), {
      title: title(samples, total, found, labels),
      width: Math.round((100 * samples) / mostMark),
      segments: [[reasonId(found.length ? found[0][0] : 'misc'), samples]]
    });
  }
  const kernels = (Array.isArray(head.kernels) ? head.kernels.filter(isObject) : []).map(k => ({
    kernel: String(k.kernel ?? ''),
    text: String(k.text ?? '')
  }));
  return {
    python: lineBars(measured.python),
    cuda: lineBars(measured.cuda),
    sass,
    device: typeof measured.device === 'string' && measured.device ? `measured on ${measured.device}` : data ? 'measured' : '',
    verdict: typeof head.verdict === 'string' ? head.verdict : '',
    verdictKey: typeof head.key === 'string' && /^py:\d+$/.test(head.key) ? head.key : null,
    kernels,
    legend: reasons.map(r => ({
      id: reasonId(String(r.id)),
      label: String(r.label ?? r.id),
      description: String(r.description ?? '')
    }))
  };
}

function element(doc: Document, tag: string, className: string, text?: string): HTMLElement {
  const node = doc.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

function segment(doc: Document, reason: string, grow: number): HTMLElement {
  const seg = element(doc, 'i', `gpulab-r-${reason}`);
  seg.style.flexGrow = String(grow);
  seg.style.background = COLOURS[reason];
  return seg;
}

/** The gutter cell of a Python or CUDA line (`gpulab-measured`) or a SASS line (`gpulab-measured-mark`); blank
 * without a bar. */
export function measuredCell(doc: Document, pane: string, bar: IMeasuredBar | undefined): HTMLElement {
  const cell = element(doc, 'span', pane === 'sass' ? 'gpulab-measured-mark' : 'gpulab-measured');
  if (bar) {
    cell.title = bar.title;
    const stack = element(doc, 'span', 'gpulab-measured-bar');
    stack.style.width = `${bar.width}%`;
    for (const [reason, n] of bar.segments) {
      stack.appendChild(segment(doc, reason, n));
    }
    cell.appendChild(stack);
  }
  return cell;
}

/** The measured cell of line `i` of pane `pane`, or null where the pane has no measured column. */
export function measuredGutter(doc: Document, view: IMeasuredView, pane: string, i: number): HTMLElement | null {
  const bars = pane === 'python' ? view.python : pane === 'cuda' ? view.cuda : pane === 'sass' ? view.sass : null;
  return bars && bars.size ? measuredCell(doc, pane, bars.get(i)) : null;
}

/**
 * The header's measured lines: the verdict (given to `link` with its line's key, so that hovering it lights the
 * line), each launch's figures, a legend; null with nothing measured.
 */
export function measuredHeader(
  doc: Document,
  view: IMeasuredView,
  link: (el: HTMLElement, key: string | null) => void = () => undefined
): HTMLElement | null {
  if (!view.verdict) {
    return null;
  }
  const box = element(doc, 'div', 'gpulab-measured-head');
  const verdict = element(doc, 'div', 'gpulab-verdict');
  verdict.append(element(doc, 'span', 'gpulab-muted', view.device), ' ', element(doc, 'b', '', view.verdict));
  link(verdict, view.verdictKey);
  box.appendChild(verdict);
  for (const k of view.kernels) {
    const row = element(doc, 'div', 'gpulab-measured-kernel');
    row.append(element(doc, 'span', 'gpulab-muted', k.kernel), ' ', k.text);
    box.appendChild(row);
  }
  if (view.legend.length) {
    const legend = element(doc, 'div', 'gpulab-legend');
    legend.appendChild(element(doc, 'span', 'gpulab-muted', 'stall reasons'));
    for (const r of view.legend) {
      const item = element(doc, 'span', 'gpulab-legend-item');
      item.title = r.description;
      const swatch = element(doc, 'i', `gpulab-r-${r.id}`);
      swatch.style.background = COLOURS[r.id];
      item.append(swatch, r.label);
      legend.appendChild(item);
    }
    box.appendChild(legend);
  }
  return box;
}
