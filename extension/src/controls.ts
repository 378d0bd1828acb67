/**
 * What a live view asks of the kernel: rebuild with another target or option, and the SASS diff
 * against a build with one option flipped. Only a widget (widget.ts) has a kernel to ask; a saved
 * output drawn by the JupyterLab extension has none, and shows no controls.
 */

/** One option the view toggles (`lto`, `fma`, `boundscheck`): its bundle field and its label. */
export interface IToggle {
  field: string;
  label: string;
  title: string;
}

/** What the kernel offers, and what it is doing (the widget's model, see gpulab/notebook/live.py). */
export interface IControls {
  /** Targets it builds for, `sm_75` ... `sm_120`. */
  targets: string[];
  toggles: IToggle[];
  /** The diffs it makes: [id, label] ("lto": "LTO flipped"). */
  diffs: [string, string][];
  /** A rebuild or diff is under way. */
  busy: boolean;
  /** The last request's error, as gpulab words it ('' for none). */
  error: string;
  /** The diff shown ('' for none): its title and text. */
  diffTitle: string;
  diffText: string;
}

/** The kernel side of a live view. */
export interface IBuildHost {
  /** Rebuild with `change` applied (`{target: 'sm_80'}`, `{lto: false}`). */
  rebuild(change: Record<string, string | boolean>): void;
  /** Show the SASS diff against the build with diff `id` applied; '' closes it. */
  diff(id: string): void;
}

type Doc = Document;

function el<K extends keyof HTMLElementTagNameMap>(doc: Doc, tag: K, cls: string, text?: string): HTMLElementTagNameMap[K] {
  const e = doc.createElement(tag);
  e.className = cls;
  if (text !== undefined) {
    e.textContent = text;
  }
  return e;
}

/** The value of toggle `field` in a bundle's options (`boundscheck` is written only when it is off). */
export function optionValue(options: Record<string, unknown> | undefined, field: string): boolean {
  const v = options?.[field];
  return field === 'boundscheck' ? v !== false : v === true;
}

/**
 * The header's build bar: a target picker, a button per option and a diff picker; each asks `host`,
 * and shows `busy` and `error` as they come.
 */
export function controlsBar(
  doc: Doc,
  controls: IControls,
  target: string,
  options: Record<string, unknown> | undefined,
  host: IBuildHost
): HTMLElement {
  const bar = el(doc, 'div', 'gpulab-controls');
  bar.setAttribute('role', 'group');
  bar.setAttribute('aria-label', 'Rebuild');
  bar.appendChild(el(doc, 'span', 'gpulab-timings-label', 'build'));
  const picker = el(doc, 'select', 'gpulab-target');
  picker.title = 'Rebuild for another target (each build is cached: going back is instant)';
  picker.setAttribute('aria-label', 'Target');
  const targets = controls.targets.includes(target) ? controls.targets : [target, ...controls.targets];
  for (const t of targets) {
    const option = el(doc, 'option', '', t);
    option.value = t;
    option.selected = t === target;
    picker.appendChild(option);
  }
  picker.disabled = controls.busy;
  picker.addEventListener('change', () => host.rebuild({ target: picker.value }));
  bar.appendChild(picker);
  for (const t of controls.toggles) {
    const on = optionValue(options, t.field);
    const button = el(doc, 'button', 'gpulab-option', t.label);
    button.type = 'button';
    button.dataset.field = t.field;
    button.title = `${t.title}: ${on ? 'on' : 'off'}; click to rebuild with it ${on ? 'off' : 'on'}`;
    button.setAttribute('aria-pressed', String(on));
    button.disabled = controls.busy;
    button.addEventListener('click', () => host.rebuild({ [t.field]: !on }));
    bar.appendChild(button);
  }
  if (controls.diffs.length) {
    const diff = el(doc, 'select', 'gpulab-diff-picker');
    diff.setAttribute('aria-label', 'SASS diff');
    diff.title = 'Align this SASS with the SASS of a build that differs in one option';
    const none = el(doc, 'option', '', 'diff…');
    none.value = '';
    diff.appendChild(none);
    for (const [id, label] of controls.diffs) {
      const option = el(doc, 'option', '', label);
      option.value = id;
      diff.appendChild(option);
    }
    diff.disabled = controls.busy;
    diff.addEventListener('change', () => host.diff(diff.value));
    bar.appendChild(diff);
  }
  const status = el(doc, 'span', 'gpulab-status', controls.busy ? 'building…' : controls.error);
  status.setAttribute('aria-live', 'polite');
  status.classList.toggle('gpulab-status-error', !controls.busy && Boolean(controls.error));
  bar.appendChild(status);
  return bar;
}

/** The SASS diff the view opened: its title, a close button, and the aligned listings as text. */
export function diffPane(doc: Doc, controls: IControls, host: IBuildHost): HTMLElement | null {
  if (!controls.diffText) {
    return null;
  }
  const pane = el(doc, 'section', 'gpulab-diff-pane');
  pane.setAttribute('aria-label', controls.diffTitle);
  const header = el(doc, 'div', 'gpulab-pane-header');
  const close = el(doc, 'button', 'gpulab-diff-close', 'Close');
  close.type = 'button';
  close.addEventListener('click', () => host.diff(''));
  header.append(el(doc, 'span', 'gpulab-pane-title', controls.diffTitle), close);
  const text = el(doc, 'pre', 'gpulab-diff-text', controls.diffText);
  pane.append(header, text);
  return pane;
}
