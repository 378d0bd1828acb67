/** Bundles shaped like docs/bundle.md, for the tests. */
import type { IBundle, IHeader } from '../src/bundle';

export const PY = 'def add(a: f32, b: f32) -> f32:\n    return a + b\n';

export function cudaText(n = 45): string {
  const lines: string[] = [];
  for (let i = 1; i <= n; i++) {
    lines.push(i === 42 ? '  float r = a + b;' : `// line ${i}`);
  }
  return lines.join('\n') + '\n';
}

export function ptxText(n = 60): string {
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    lines.push(i === 57 ? '\tadd.f32 \t%f3, %f1, %f2;' : `\t// ptx ${i}`);
  }
  return lines.join('\n') + '\n';
}

export function sassText(n = 20): string {
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const addr = (i * 16).toString(16).padStart(4, '0');
    lines.push(
      i === 12
        ? `        /*${addr}*/                   FADD R5, R2, R5 ;`
        : `        /*${addr}*/                   NOP ;`
    );
  }
  return lines.join('\n') + '\n';
}

/** A header model as gpulab makes one (gpulab.compiler.bundle.header_of), for a build with `lto` and `calls`. */
export function exampleHeader(lto = true, calls = 0, title = 'add'): IHeader {
  return {
    title,
    chips: [
      { field: 'primitive', text: 'reduce', title: 'primitive', tone: '' },
      { field: 'target', text: 'sm_90', title: 'target architecture', tone: '' },
      { field: 'lto', text: lto ? 'LTO on' : 'LTO off', title: '', tone: lto ? 'on' : 'off' },
      { field: 'sass_instructions', text: '412 SASS instructions', title: 'SASS instructions', tone: '' },
      { field: 'sass_calls', text: `${calls} CALLs`, title: 'CALL instructions in the SASS', tone: calls ? 'warn' : '' },
      { field: 'key', text: 'key 3f9a012345', title: 'cache key 3f9a0123456789', tone: '' }
    ],
    options: 'lineinfo=on fma=on',
    kernels: {
      columns: [['kernel', 'kernel'], ['registers', 'registers'], ['shared_bytes', 'shared'], ['spill_stores', 'spill stores']],
      rows: [{
        kernel: 'gpulab_reduce_partials',
        cells: { kernel: 'gpulab_reduce_partials', registers: '32', shared_bytes: '128 B', spill_stores: '0' },
        warn: []
      }]
    },
    timings: [['nvrtc', '31.0 ms'], ['link', '54.0 ms'], ['total', '85.0 ms']],
    build: null
  };
}

export function exampleBundle(overrides: Partial<IBundle> = {}): IBundle {
  return {
    version: 1,
    name: 'add',
    primitive: 'reduce',
    target: 'sm_90',
    lto: true,
    key: '3f9a0123456789',
    options: { lto: true, lineinfo: true, fma: true },
    panes: [
      { id: 'python', title: 'Python', language: 'python', text: PY, first_line: 1 },
      { id: 'cuda', title: 'CUDA C++', language: 'cuda', text: cudaText(), first_line: 1 },
      { id: 'ptx', title: 'PTX', language: 'ptx', text: ptxText(), first_line: 1 },
      { id: 'sass', title: 'SASS', language: 'sass', text: sassText(), first_line: 1 }
    ],
    links: {
      python: { '0': ['py:1'], '1': ['py:2'] },
      cuda: { '0': ['cu:1'], '41': ['cu:42'] },
      ptx: { '57': ['py:2', 'cu:42'] },
      sass: { '12': ['py:2', 'cu:42'], '13': ['cu:40'] }
    },
    stats: { sass_instructions: 412, sass_calls: 0, ptx_lines: 380 },
    header: exampleHeader(),
    compare: null,
    ...overrides
  };
}
