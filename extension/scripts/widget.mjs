// Build the live view's anywidget module (src/widget.ts) and its stylesheet into
// ../gpulab/notebook/static: widget.js (one ES module, minified), loader.js (what each view's model
// carries: it imports widget.js from the kernel's one shared copy) and widget.css (the palette of
// ../gpulab/display/tokens.json, style/standalone.css, style/base.css).
import { build } from 'esbuild';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..');
const out = resolve(root, '../gpulab/notebook/static');
mkdirSync(out, { recursive: true });

await build({
  entryPoints: ['widget', 'loader'].map(name => resolve(root, `src/${name}.ts`)),
  bundle: true,
  format: 'esm',
  minify: true,
  target: 'es2020',
  outdir: out,
  legalComments: 'none'
});

const tokens = JSON.parse(readFileSync(resolve(root, '../gpulab/display/tokens.json'), 'utf8'));
const scheme = name => Object.entries(tokens[name]).map(([k, v]) => `--gl-${k}:${v};`).join('');
const palette =
  `.gpulab-build.gpulab-standalone{color-scheme:light;${scheme('light')}}\n` +
  `.gpulab-build.gpulab-standalone[data-gpulab-theme='dark']{color-scheme:dark;${scheme('dark')}}\n`;
const css = ['style/standalone.css', 'style/base.css'].map(f => readFileSync(resolve(root, f), 'utf8'));
writeFileSync(resolve(out, 'widget.css'), [palette, ...css].join('\n'));
console.log(`widget.js, loader.js and widget.css written to ${out}`);
