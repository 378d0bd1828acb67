/**
 * Which view a notebook's gpulab output shows in JupyterLab 4 and Notebook 7: the live one (the
 * anywidget of widget.ts, through the lab's widget manager) while the kernel holds its model, else
 * the saved build bundle drawn by this extension (a notebook reopened with no kernel, or another one).
 *
 * The output of a build carries both (gpulab/notebook/live.py). The widget manager's renderer shows
 * "model not found" for a model the kernel no longer has; so in each notebook this renderer takes the
 * build bundle before the widget's MIME type, and hands the output to the widget's renderer only
 * when the kernel says the model's comm is open. One output, one view.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Panel } from '@lumino/widgets';

import { MIME_TYPE } from './bundle';
import { BuildRenderer } from './index';

export const WIDGET_MIME_TYPE = 'application/vnd.jupyter.widget-view+json';
/** Before the widget manager's renderer (rank -10), which would win otherwise. */
const RANK = -20;
/** How long a reopened notebook waits for its kernel before it keeps the saved view. */
const KERNEL_WAIT_MS = 10_000;

/** Whether the notebook's kernel holds widget model `id` (its comm is open): then the live view can draw. */
export async function holdsModel(panel: NotebookPanel, id: string): Promise<boolean> {
  const kernel = panel.sessionContext.session?.kernel;
  if (!kernel || !id) {
    return false;
  }
  try {
    const reply = await kernel.requestCommInfo({ target_name: 'jupyter.widget' });
    const comms = (reply.content as { comms?: Record<string, unknown> }).comms ?? {};
    return Object.prototype.hasOwnProperty.call(comms, id);
  } catch {
    return false;
  }
}

/** The live view while the kernel holds its model, else the saved one. */
class LiveOrSaved extends Panel implements IRenderMime.IRenderer {
  private readonly _options: IRenderMime.IRendererOptions;
  private readonly _panel: NotebookPanel;

  constructor(options: IRenderMime.IRendererOptions, panel: NotebookPanel) {
    super();
    this._options = options;
    this._panel = panel;
    this.addClass('gpulab-output-switch');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const id = (model.data[WIDGET_MIME_TYPE] as { model_id?: string } | undefined)?.model_id ?? '';
    const session = this._panel.sessionContext;
    if (id && model.trusted && session.isReady && (await holdsModel(this._panel, id))) {
      return this._show(WIDGET_MIME_TYPE, model);
    }
    await this._show(MIME_TYPE, model);
    if (id && model.trusted && !session.isReady) {
      // A notebook just reopened: its kernel (if it has one still running) connects later.
      const ready = await Promise.race([
        session.ready.then(() => true, () => false),
        new Promise<boolean>(resolve => setTimeout(() => resolve(false), KERNEL_WAIT_MS))
      ]);
      if (ready && !this.isDisposed && (await holdsModel(this._panel, id))) {
        await this._show(WIDGET_MIME_TYPE, model);
      }
    }
  }

  private async _show(mimeType: string, model: IRenderMime.IMimeModel): Promise<void> {
    const renderer =
      mimeType === MIME_TYPE
        ? new BuildRenderer({ ...this._options, mimeType })
        : this._panel.content.rendermime.createRenderer(mimeType);
    for (const old of [...this.widgets]) {
      old.dispose();
    }
    this.node.dataset.view = mimeType === MIME_TYPE ? 'saved' : 'live';
    this.addWidget(renderer);
    await renderer.renderModel(model);
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'gpulab:live-or-saved',
  description: "Shows a gpulab output's live view while the kernel holds its model, else the saved build view.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, notebooks: INotebookTracker) => {
    notebooks.widgetAdded.connect((_sender, panel) => {
      panel.content.rendermime.addFactory(
        { safe: true, mimeTypes: [MIME_TYPE], defaultRank: RANK, createRenderer: options => new LiveOrSaved(options, panel) },
        RANK
      );
    });
  }
};

export default plugin;
