/**
 * JupyterLab MIME renderer for gpulab build views
 * (`application/vnd.gpulab.build+json`, see docs/bundle.md).
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { MIME_TYPE } from './bundle';
import { BuildView } from './view';

export { MIME_TYPE } from './bundle';
export { BuildView, PaneView } from './view';
export { LineMap } from './linemap';
export { PALETTE, colourOf } from './palette';

const CLASS_NAME = 'gpulab-output';

/** A Lumino widget that renders one build bundle. */
export class BuildRenderer extends Widget implements IRenderMime.IRenderer {
  private readonly _mimeType: string;
  private readonly _view: BuildView;

  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this._mimeType = options.mimeType;
    this.addClass(CLASS_NAME);
    this._view = new BuildView(this.node.ownerDocument ?? document);
    this.node.appendChild(this._view.node);
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this._view.render(model.data[this._mimeType]);
    return Promise.resolve();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._view.dispose();
    super.dispose();
  }
}

/** Renders every string as text, so it is safe for untrusted outputs. */
export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  // Lower ranks win: text/html is 50, so the build view is preferred.
  defaultRank: 0,
  createRenderer: options => new BuildRenderer(options)
};

const extension: IRenderMime.IExtension = {
  id: 'gpulab:build-renderer',
  description: 'Renders gpulab build views: Python, CUDA C++, PTX and SASS with linked lines.',
  rendererFactory,
  rank: 0,
  dataType: 'json'
};

export default extension;
