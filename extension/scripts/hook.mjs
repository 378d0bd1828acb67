#!/usr/bin/env node
/**
 * The "npm" that the Python build calls (pyproject.toml,
 * [tool.hatch.build.hooks.jupyter-builder]); hatch-jupyter-builder runs
 * `hook.mjs install` and then `hook.mjs run <build_cmd>` in extension/.
 *
 *   install              `npm ci`: exact versions from package-lock.json, which
 *                        it never rewrites. Skipped when node_modules was
 *                        already installed from the current lock file.
 *   run build:if-stale   `npm run build:prod`, unless ../gpulab/labextension and
 *                        the live view's ../gpulab/notebook/static are newer than
 *                        every source file (src/, style/, scripts/widget.mjs,
 *                        ../gpulab/display/tokens.json, package.json,
 *                        package-lock.json, tsconfig.json).
 *   anything else        passed to npm as is.
 *
 * Set GPULAB_FORCE_JS_BUILD=1 to install and build regardless.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const force = ['1', 'true', 'yes'].includes(
  String(process.env.GPULAB_FORCE_JS_BUILD || '').toLowerCase()
);

function npm(args) {
  const win = process.platform === 'win32';
  console.log(`[gpulab] npm ${args.join(' ')}`);
  const r = spawnSync(win ? 'npm.cmd' : 'npm', args, {
    cwd: here,
    stdio: 'inherit',
    shell: win
  });
  if (r.error) {
    console.error(`[gpulab] could not run npm: ${r.error.message}`);
    console.error('[gpulab] Node.js (>= 20.19) with npm is needed to build the JupyterLab extension.');
    process.exit(1);
  }
  process.exit(r.status ?? 1);
}

function mtime(p) {
  try {
    return statSync(p).mtimeMs;
  } catch {
    return -1;
  }
}

/** Newest (or oldest) mtime of the files under `p`. */
function treeMtime(p, newest = true) {
  let st;
  try {
    st = statSync(p);
  } catch {
    return -1;
  }
  if (!st.isDirectory()) {
    return st.mtimeMs;
  }
  let best = -1;
  for (const e of readdirSync(p)) {
    const m = treeMtime(join(p, e), newest);
    if (m < 0) continue;
    if (best < 0 || (newest ? m > best : m < best)) best = m;
  }
  return best;
}

const [cmd, ...rest] = process.argv.slice(2);

if (cmd === 'install') {
  const hidden = join(here, 'node_modules', '.package-lock.json');
  const fresh =
    existsSync(hidden) &&
    mtime(hidden) >= mtime(join(here, 'package-lock.json')) &&
    mtime(hidden) >= mtime(join(here, 'package.json'));
  if (fresh && !force) {
    console.log('[gpulab] node_modules is up to date with package-lock.json; skipping npm ci');
    process.exit(0);
  }
  npm(['ci', ...rest]);
} else if (cmd === 'run' && rest[0] === 'build:if-stale') {
  const lab = resolve(here, '..', 'gpulab', 'labextension');
  const widget = resolve(here, '..', 'gpulab', 'notebook', 'static');
  const built =
    existsSync(join(lab, 'package.json')) && existsSync(join(widget, 'widget.js'))
      ? Math.min(treeMtime(lab, false), treeMtime(widget, false))
      : -1;
  const sources = Math.max(
    ...['src', 'style', 'scripts/widget.mjs', '../gpulab/display/tokens.json', 'package.json',
      'package-lock.json', 'tsconfig.json'].map(p => treeMtime(join(here, p)))
  );
  if (built >= 0 && built >= sources && !force) {
    console.log('[gpulab] gpulab/labextension and gpulab/notebook/static are up to date; skipping the JS build');
    process.exit(0);
  }
  npm(['run', 'build:prod']);
} else {
  npm([cmd, ...rest].filter(a => a !== undefined));
}
