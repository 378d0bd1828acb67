/**
 * The live build view as an anywidget ES module: the same BuildView the JupyterLab extension draws,
 * wrapped for any frontend with a widget manager (JupyterLab 4, Notebook 7, VS Code, Colab, marimo).
 * Its model (gpulab/notebook/live.py) holds the bundle and what the kernel offers; the view's build
 * bar asks the kernel to rebuild or diff with a custom message, and redraws when the bundle changes.
 */
import { IControls } from './controls';
import { BuildView } from './view';

/** What the view reads of anywidget's model (see anywidget's AFM: `get`, `on`, `off`, `send`). */
export interface IModel {
  get(name: string): unknown;
  on(event: string, callback: () => void): void;
  off(event: string, callback: () => void): void;
  send(content: Record<string, unknown>): void;
}

/** The model's controls as the view reads them (`{}` when the kernel can rebuild nothing). */
export function controlsOf(model: IModel): IControls | null {
  const offer = (model.get('controls') ?? {}) as Partial<IControls>;
  if (!Array.isArray(offer.targets)) {
    return null;
  }
  return {
    targets: offer.targets.map(String),
    toggles: Array.isArray(offer.toggles) ? offer.toggles : [],
    diffs: Array.isArray(offer.diffs) ? offer.diffs : [],
    busy: model.get('busy') === true,
    error: String(model.get('error') ?? ''),
    diffTitle: String(model.get('diff_title') ?? ''),
    diffText: String(model.get('diff_text') ?? '')
  };
}

/** Whether the host draws with JupyterLab's theme variables (JupyterLab, Notebook 7). */
function hasJupyterTheme(el: HTMLElement): boolean {
  const view = el.ownerDocument.defaultView;
  return Boolean(view && view.getComputedStyle(el).getPropertyValue('--jp-layout-color0').trim());
}

/** 'dark' or 'light', as the host is: VS Code's body class, a `dark` class or theme attribute, else its background. */
export function hostTheme(el: HTMLElement): 'dark' | 'light' {
  const doc = el.ownerDocument;
  const marks = [doc.documentElement, doc.body].filter(Boolean);
  for (const e of marks) {
    const cls = e.classList;
    if (cls.contains('vscode-light') || cls.contains('vscode-high-contrast-light') || cls.contains('light')) {
      return 'light';
    }
    if (cls.contains('vscode-dark') || cls.contains('vscode-high-contrast') || cls.contains('dark')) {
      return 'dark';
    }
    const attr = e.getAttribute('data-theme') ?? e.getAttribute('data-color-mode');
    if (attr === 'dark' || attr === 'light') {
      return attr;
    }
  }
  const view = doc.defaultView;
  for (let e: HTMLElement | null = el.parentElement; e && view; e = e.parentElement) {
    const m = view.getComputedStyle(e).backgroundColor.match(/rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?/);
    if (m && (m[4] === undefined || Number(m[4]) > 0.5)) {
      const [r, g, b] = [m[1], m[2], m[3]].map(Number);
      return 0.2126 * r + 0.7152 * g + 0.0722 * b < 128 ? 'dark' : 'light';
    }
  }
  return view?.matchMedia?.('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

/** anywidget's render: draw the model's bundle in `el`, follow the model and the host's theme. */
function render({ model, el }: { model: IModel; el: HTMLElement }): () => void {
  const doc = el.ownerDocument;
  const view = new BuildView(doc, {
    rebuild: change => model.send({ kind: 'rebuild', change }),
    diff: id => model.send({ kind: 'diff', id })
  });
  el.appendChild(view.node);
  const theme = (): void => {
    const standalone = !hasJupyterTheme(el);
    view.node.classList.toggle('gpulab-standalone', standalone);
    if (standalone) {
      view.node.dataset.gpulabTheme = hostTheme(el);
    } else {
      delete view.node.dataset.gpulabTheme;
    }
  };
  const draw = (): void => {
    view.render(model.get('bundle'));
    view.setControls(controlsOf(model));
  };
  const controls = (): void => view.setControls(controlsOf(model));
  draw();
  theme();
  const events = ['change:controls', 'change:busy', 'change:error', 'change:diff_text', 'change:diff_title'];
  model.on('change:bundle', draw);
  events.forEach(e => model.on(e, controls));
  // The host switches themes by a class or attribute on <html> or <body>, or by the system's scheme.
  const watch = new (doc.defaultView as Window & typeof globalThis).MutationObserver(theme);
  for (const e of [doc.documentElement, doc.body]) {
    watch.observe(e, { attributes: true, attributeFilter: ['class', 'data-theme', 'data-jp-theme-light', 'style'] });
  }
  const scheme = doc.defaultView?.matchMedia?.('(prefers-color-scheme: dark)');
  scheme?.addEventListener?.('change', theme);
  return () => {
    model.off('change:bundle', draw);
    events.forEach(e => model.off(e, controls));
    watch.disconnect();
    scheme?.removeEventListener?.('change', theme);
    view.dispose();
  };
}

export default { render };
