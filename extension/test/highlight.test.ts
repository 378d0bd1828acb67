import { describe, expect, it } from 'vitest';

import {
  IToken,
  lineStarts,
  segments,
  tokenizePtxLine,
  tokenizeSassLine,
  tokenizerFor
} from '../src/highlight';
import { splitLines } from '../src/linemap';

const text = (line: string, toks: IToken[], cls: string): string[] =>
  toks.filter(t => t.cls.split(' ').includes(cls)).map(t => line.slice(t.from, t.to));

describe('lineStarts', () => {
  it('agrees with splitLines', () => {
    for (const s of ['', 'a', 'a\n', 'a\nbc\n\nd', '\n\n']) {
      expect(lineStarts(s).length).toBe(splitLines(s).length);
    }
    expect(lineStarts('a\nbc\nd')).toEqual([0, 2, 5]);
  });
});

describe('Python and CUDA (Lezer)', () => {
  it('highlights Python per line', () => {
    const src = 'def add(a: f32, b: f32) -> f32:\n    return a + b  # sum\n';
    const lines = splitLines(src);
    const tok = tokenizerFor('python', src);
    const l0 = tok(0, lines[0]);
    expect(text(lines[0], l0, 'tok-keyword')).toContain('def');
    expect(text(lines[0], l0, 'tok-definition')).toContain('add');
    const l1 = tok(1, lines[1]);
    expect(text(lines[1], l1, 'tok-keyword')).toContain('return');
    expect(text(lines[1], l1, 'tok-comment')).toEqual(['# sum']);
    for (const t of [...l0, ...l1]) {
      expect(t.from).toBeGreaterThanOrEqual(0);
      expect(t.to).toBeGreaterThan(t.from);
    }
  });

  it('highlights CUDA C++ including a comment spanning lines', () => {
    const src = 'extern "C" __global__ void k(float* x) {\n  /* a\n  b */ x[0] = 1.5f;\n}\n';
    const lines = splitLines(src);
    const tok = tokenizerFor('cuda', src);
    expect(text(lines[0], tok(0, lines[0]), 'tok-string')).toEqual(['"C"']);
    expect(text(lines[1], tok(1, lines[1]), 'tok-comment')).toEqual(['/* a']);
    expect(text(lines[2], tok(2, lines[2]), 'tok-comment')).toEqual(['  b */']);
    expect(text(lines[2], tok(2, lines[2]), 'tok-number')).toEqual(['0', '1.5f']);
  });

  it('gives no tokens for an unknown language', () => {
    expect(tokenizerFor('cobol', 'MOVE A TO B')(0, 'MOVE A TO B')).toEqual([]);
  });
});

describe('PTX', () => {
  it('tokenizes instructions, registers, directives and comments', () => {
    const l = '\t@%p1 ld.global.f32 \t%f1, [%rd4+8]; // load';
    const t = tokenizePtxLine(l);
    expect(text(l, t, 'tok-atom')).toEqual(['@%p1']);
    expect(text(l, t, 'tok-keyword')).toEqual(['ld.global.f32']);
    expect(text(l, t, 'tok-variableName')).toEqual(['%f1', '%rd4']);
    expect(text(l, t, 'tok-number')).toEqual(['8']);
    expect(text(l, t, 'tok-comment')).toEqual(['// load']);
    const d = '.visible .entry add(';
    expect(text(d, tokenizePtxLine(d), 'tok-meta')).toEqual(['.visible', '.entry']);
    const lab = '$L__BB0_2:';
    expect(text(lab, tokenizePtxLine(lab), 'tok-labelName')).toEqual(['$L__BB0_2:']);
    const f = 'mov.f32 %f2, 0f3F800000;';
    expect(text(f, tokenizePtxLine(f), 'tok-number')).toEqual(['0f3F800000']);
  });
});

describe('SASS', () => {
  it('tokenizes nvdisasm lines', () => {
    const l =
      '        /*0070*/              @!P0 IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;  /* 0x00000a00ff017624 */';
    const t = tokenizeSassLine(l);
    expect(text(l, t, 'gpulab-addr')).toEqual(['/*0070*/']);
    expect(text(l, t, 'tok-atom')).toEqual(['@!P0']);
    expect(text(l, t, 'tok-keyword')).toEqual(['IMAD.MOV.U32']);
    expect(text(l, t, 'tok-variableName')).toEqual(['R1', 'RZ', 'RZ']);
    expect(text(l, t, 'tok-number')).toEqual(['0x0', '0x28']);
    expect(text(l, t, 'tok-comment')).toContain('/* 0x00000a00ff017624 */');
  });

  it('marks CALL instructions and labels', () => {
    const l = '        /*0090*/                   CALL.REL.NOINC `(.L_x_12) ;';
    const t = tokenizeSassLine(l);
    expect(text(l, t, 'gpulab-call')).toEqual(['CALL.REL.NOINC']);
    expect(text(l, t, 'tok-labelName')).toEqual(['`(.L_x_12)']);
    const lab = '.L_x_0:';
    expect(text(lab, tokenizeSassLine(lab), 'tok-labelName')).toEqual(['.L_x_0:']);
  });

  it('is fast enough per line', () => {
    const l = '        /*1230*/                   FFMA R5, R2, R5, -R3.reuse ;  /* 0x00000a00ff017624 */';
    const t0 = performance.now();
    for (let i = 0; i < 20000; i++) {
      tokenizeSassLine(l);
    }
    expect(performance.now() - t0).toBeLessThan(3000);
  });
});

describe('segments', () => {
  it('cuts at token and mark boundaries and merges equal neighbours', () => {
    const toks: IToken[] = [
      { from: 0, to: 3, cls: 'tok-keyword' },
      { from: 4, to: 7, cls: 'tok-variableName' }
    ];
    expect(segments(8, toks)).toEqual([
      { from: 0, to: 3, cls: 'tok-keyword', mark: 0 },
      { from: 3, to: 4, cls: '', mark: 0 },
      { from: 4, to: 7, cls: 'tok-variableName', mark: 0 },
      { from: 7, to: 8, cls: '', mark: 0 }
    ]);
    expect(segments(8, toks, [[2, 5]])).toEqual([
      { from: 0, to: 2, cls: 'tok-keyword', mark: 0 },
      { from: 2, to: 3, cls: 'tok-keyword', mark: 1 },
      { from: 3, to: 4, cls: '', mark: 1 },
      { from: 4, to: 5, cls: 'tok-variableName', mark: 1 },
      { from: 5, to: 7, cls: 'tok-variableName', mark: 0 },
      { from: 7, to: 8, cls: '', mark: 0 }
    ]);
    expect(segments(0, [])).toEqual([]);
    expect(segments(3, [])).toEqual([{ from: 0, to: 3, cls: '', mark: 0 }]);
  });
});
