/**
 * The live view's anywidget module as each view's model carries it: a loader of about a kilobyte.
 * The view itself (widget.ts, ~240 KB) and its stylesheet travel once per kernel, in one shared model
 * that each view's `module` names (gpulab/notebook/live.py's ViewModule); the page imports that
 * module once per digest and puts the stylesheet where the views are drawn once, however many it shows.
 */
import type { IModel } from './widget';

/** What the loader reads of a view's model: anywidget's, with the widget manager it exposes. */
interface ILoaderModel extends IModel {
  widget_manager: { get_model(id: string): Promise<{ get(name: string): unknown }> };
}

interface IViewModule {
  render(args: { model: IModel; el: HTMLElement }): () => void;
}

const REFERENCE = 'IPY_MODEL_';
const LOADED = '__gpulabViewModules';

/** The page's modules by digest: shared by every view's copy of this loader (anywidget loads one per view). */
function loaded(): Map<string, Promise<IViewModule>> {
  const page = globalThis as typeof globalThis & { [LOADED]?: Map<string, Promise<IViewModule>> };
  return (page[LOADED] ??= new Map());
}

async function importText(source: string): Promise<IViewModule> {
  const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
  try {
    return (await import(/* webpackIgnore: true */ /* @vite-ignore */ url)).default as IViewModule;
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** The stylesheet of `digest` where `el` is drawn, added once: in the shadow root that holds `el` (marimo
 * draws each anywidget in one), else in its document's head. */
function addStyle(el: HTMLElement, digest: string, css: string): void {
  const root = el.getRootNode();
  const into = root instanceof ShadowRoot ? root : el.ownerDocument.head;
  if (into.querySelector(`style[data-gpulab-view="${CSS.escape(digest)}"]`)) {
    return;
  }
  const style = el.ownerDocument.createElement('style');
  style.dataset.gpulabView = digest;
  style.textContent = css;
  into.appendChild(style);
}

/** The view module a model names, imported once per page; its stylesheet added where `el` is drawn. */
async function viewModule(model: ILoaderModel, el: HTMLElement): Promise<IViewModule> {
  const reference = String(model.get('module') ?? '');
  if (!reference.startsWith(REFERENCE)) {
    throw new Error("gpulab: this view's model names no shared module (saved by an older gpulab?): run its cell again");
  }
  const shared = await model.widget_manager.get_model(reference.slice(REFERENCE.length));
  const digest = String(shared.get('digest'));
  addStyle(el, digest, String(shared.get('style')));
  const modules = loaded();
  let found = modules.get(digest);
  if (!found) {
    found = importText(String(shared.get('source')));
    modules.set(digest, found);
    found.catch(() => modules.delete(digest));
  }
  return found;
}

/** anywidget's render: the shared view's render, once its module is loaded; else what went wrong, in `el`. */
async function render({ model, el }: { model: ILoaderModel; el: HTMLElement }): Promise<() => void> {
  try {
    const view = await viewModule(model, el);
    return view.render({ model, el });
  } catch (error) {
    el.textContent = error instanceof Error ? error.message : String(error);
    return () => undefined;
  }
}

export default { render };
