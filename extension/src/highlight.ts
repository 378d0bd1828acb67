/**
 * Static syntax highlighting, one line at a time.
 *
 * Python and CUDA C++ are parsed once with the Lezer grammars that
 * CodeMirror 6 uses (@lezer/python, @lezer/cpp) and highlighted with
 * @lezer/highlight's `classHighlighter` (classes `tok-keyword`,
 * `tok-string`, ...). PTX and SASS use the small line tokenizers below,
 * which emit the same class names. Nothing here touches the DOM.
 */
import { classHighlighter, highlightTree } from '@lezer/highlight';
import { parser as cppParser } from '@lezer/cpp';
import { parser as pythonParser } from '@lezer/python';

/** A highlighted range [from, to) of one line, with space-separated classes. */
export interface IToken {
  from: number;
  to: number;
  cls: string;
}

/** Returns the tokens of 0-based line `i` (offsets within that line). */
export type LineTokenizer = (i: number, lineText: string) => IToken[];

/** Offsets at which each line of `text` starts (same lines as splitLines). */
export function lineStarts(text: string): number[] {
  const starts = text === '' ? [] : [0];
  let i = text.indexOf('\n');
  while (i !== -1) {
    if (i + 1 < text.length) {
      starts.push(i + 1);
    }
    i = text.indexOf('\n', i + 1);
  }
  return starts;
}

/**
 * Highlight a whole document with a Lezer parser, lazily on first use, and
 * hand out per-line tokens by binary search over the document's ranges.
 */
function lezerTokenizer(
  text: string,
  parse: (text: string) => Parameters<typeof highlightTree>[0]
): LineTokenizer {
  let froms: number[] | null = null;
  let tos: number[] = [];
  let classes: string[] = [];
  let starts: number[] = [];
  const prepare = (): void => {
    froms = [];
    tos = [];
    classes = [];
    starts = lineStarts(text);
    try {
      const tree = parse(text);
      const f = froms;
      highlightTree(tree, classHighlighter, (from, to, cls) => {
        f.push(from);
        tos.push(to);
        classes.push(cls);
      });
    } catch {
      // A grammar failure only costs the colours.
    }
  };
  return (i: number, lineText: string): IToken[] => {
    if (froms === null) {
      prepare();
    }
    const f = froms as number[];
    const ls = starts[i];
    if (ls === undefined) {
      return [];
    }
    const le = ls + lineText.length;
    // First range that ends after the line starts.
    let lo = 0;
    let hi = tos.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (tos[mid] <= ls) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    const out: IToken[] = [];
    for (let k = lo; k < f.length && f[k] < le; k++) {
      const from = Math.max(f[k], ls) - ls;
      const to = Math.min(tos[k], le) - ls;
      if (to > from) {
        out.push({ from, to, cls: classes[k] });
      }
    }
    return out;
  };
}

interface IRule {
  re: RegExp; // sticky
  cls: string | ((m: RegExpExecArray, state: IScanState) => string);
}

interface IScanState {
  /** True where the next word is an instruction's opcode. */
  expectOp: boolean;
}

function scan(line: string, rules: readonly IRule[]): IToken[] {
  const out: IToken[] = [];
  const st: IScanState = { expectOp: true };
  let pos = 0;
  outer: while (pos < line.length) {
    for (const rule of rules) {
      rule.re.lastIndex = pos;
      const m = rule.re.exec(line);
      if (m && m[0].length > 0) {
        const cls = typeof rule.cls === 'string' ? rule.cls : rule.cls(m, st);
        if (cls) {
          out.push({ from: pos, to: pos + m[0].length, cls });
        }
        pos += m[0].length;
        continue outer;
      }
    }
    pos++;
  }
  return out;
}

const PTX_RULES: IRule[] = [
  { re: /\s+/y, cls: '' },
  { re: /\/\/.*/y, cls: 'tok-comment' },
  { re: /\/\*.*?(\*\/|$)/y, cls: 'tok-comment' },
  { re: /"(?:[^"\\]|\\.)*"?/y, cls: 'tok-string' },
  {
    re: /[$%]?[A-Za-z_$][\w$]*:(?!:)/y,
    cls: (m, st) => (st.expectOp ? 'tok-labelName' : '')
  },
  {
    re: /@!?%?[\w$]+/y,
    cls: 'tok-atom'
  },
  {
    re: /\.[A-Za-z_][\w]*/y,
    cls: (m, st) => {
      st.expectOp = false;
      return 'tok-meta';
    }
  },
  { re: /%[A-Za-z_$][\w$]*(\.[xyzw])?/y, cls: 'tok-variableName' },
  { re: /0[fFdD][0-9A-Fa-f]+/y, cls: 'tok-number' },
  { re: /0[xX][0-9A-Fa-f]+U?/y, cls: 'tok-number' },
  { re: /\d+(\.\d+)?([eE][+-]?\d+)?U?/y, cls: 'tok-number' },
  {
    re: /[A-Za-z_$][\w$]*(\.[\w$]+)*/y,
    cls: (m, st) => {
      if (st.expectOp) {
        st.expectOp = false;
        return 'tok-keyword';
      }
      return '';
    }
  },
  { re: /[{}[\](),;<>+\-|!]/y, cls: 'tok-punctuation' }
];

/** Tokens of one line of PTX. */
export function tokenizePtxLine(line: string): IToken[] {
  return scan(line, PTX);
}

const SASS_RULES: IRule[] = [
  { re: /\s+/y, cls: '' },
  { re: /\/\*[0-9a-fA-F]{2,}\*\//y, cls: 'tok-comment gpulab-addr' },
  { re: /\/\*.*?(\*\/|$)/y, cls: 'tok-comment' },
  { re: /\/\/.*/y, cls: 'tok-comment' },
  { re: /#.*/y, cls: 'tok-comment' },
  { re: /"(?:[^"\\]|\\.)*"?/y, cls: 'tok-string' },
  { re: /`\([^)]*\)/y, cls: 'tok-labelName' },
  {
    re: /\.?[A-Za-z_$][\w$.]*:(?!:)/y,
    cls: (m, st) => (st.expectOp ? 'tok-labelName' : '')
  },
  { re: /@!?U?P(T|\d+)\b/y, cls: 'tok-atom' },
  {
    re: /\.[A-Za-z_][\w.]*/y,
    cls: (m, st) => {
      if (st.expectOp) {
        st.expectOp = false;
        return 'tok-meta';
      }
      return '';
    }
  },
  {
    re: /[-!|~]?\b(R\d+|RZ|UR\d+|URZ|P\d+|PT|UP\d+|UPT|B\d+|SR_[A-Z0-9_.]+|SRZ)\b(\.[A-Za-z0-9_]+)*\|?/y,
    cls: 'tok-variableName'
  },
  { re: /c(?=\[)/y, cls: 'tok-propertyName' },
  { re: /-?0x[0-9a-fA-F]+/y, cls: 'tok-number' },
  { re: /[+-]?(INF|QNAN|NAN)\b/y, cls: 'tok-number' },
  { re: /-?\d+(\.\d+)?([eE][+-]?\d+)?/y, cls: 'tok-number' },
  {
    re: /[A-Za-z_][\w]*(\.[\w]+)*/y,
    cls: (m, st) => {
      if (st.expectOp) {
        st.expectOp = false;
        return /^CALL\b/.test(m[0]) ? 'tok-keyword gpulab-call' : 'tok-keyword';
      }
      return '';
    }
  },
  { re: /[{}[\](),;|]/y, cls: 'tok-punctuation' }
];

/** Tokens of one line of SASS (nvdisasm / cuobjdump output). */
export function tokenizeSassLine(line: string): IToken[] {
  return scan(line, SASS);
}

/**
 * `;`, `{` and `}` end a statement: the next word is an opcode again. They
 * are matched by the punctuation rule, which is wrapped to reset the state.
 */
function withStatementEnds(rules: IRule[]): readonly IRule[] {
  return rules.map(r =>
    r.cls === 'tok-punctuation'
      ? {
          re: r.re,
          cls: (m: RegExpExecArray, st: IScanState) => {
            if (m[0] === ';' || m[0] === '{' || m[0] === '}') {
              st.expectOp = true;
            }
            return 'tok-punctuation';
          }
        }
      : r
  );
}

const PTX = withStatementEnds(PTX_RULES);
const SASS = withStatementEnds(SASS_RULES);

/** A tokenizer for a whole pane, by the pane's `language`. */
export function tokenizerFor(language: string, text: string): LineTokenizer {
  switch (language.toLowerCase()) {
    case 'python':
    case 'py':
      return lezerTokenizer(text, t => pythonParser.parse(t));
    case 'cuda':
    case 'c++':
    case 'cpp':
    case 'c':
      return lezerTokenizer(text, t => cppParser.parse(t));
    case 'ptx':
      return (_i, line) => tokenizePtxLine(line);
    case 'sass':
      return (_i, line) => tokenizeSassLine(line);
    default:
      return () => [];
  }
}

/** A piece of a line: plain or highlighted text, maybe inside a search match. */
export interface ISegment {
  from: number;
  to: number;
  cls: string;
  /** 0 outside a search match, else 1 + index of the match within the line. */
  mark: number;
}

/**
 * Cut a line into segments so that every token and every search match
 * boundary falls on a segment boundary. `tokens` must be sorted and
 * non-overlapping; `marks` are [from, to) ranges, sorted and non-overlapping.
 */
export function segments(
  length: number,
  tokens: readonly IToken[],
  marks: readonly (readonly [number, number])[] = []
): ISegment[] {
  const cuts = new Set<number>([0, length]);
  for (const t of tokens) {
    cuts.add(Math.max(0, Math.min(length, t.from)));
    cuts.add(Math.max(0, Math.min(length, t.to)));
  }
  for (const [a, b] of marks) {
    cuts.add(Math.max(0, Math.min(length, a)));
    cuts.add(Math.max(0, Math.min(length, b)));
  }
  const points = Array.from(cuts).sort((a, b) => a - b);
  const out: ISegment[] = [];
  let ti = 0;
  let mi = 0;
  for (let k = 0; k + 1 < points.length; k++) {
    const from = points[k];
    const to = points[k + 1];
    while (ti < tokens.length && tokens[ti].to <= from) {
      ti++;
    }
    while (mi < marks.length && marks[mi][1] <= from) {
      mi++;
    }
    const cls =
      ti < tokens.length && tokens[ti].from <= from && tokens[ti].to >= to
        ? tokens[ti].cls
        : '';
    const mark =
      mi < marks.length && marks[mi][0] <= from && marks[mi][1] >= to ? mi + 1 : 0;
    const prev = out[out.length - 1];
    if (prev && prev.cls === cls && prev.mark === mark) {
      prev.to = to;
    } else {
      out.push({ from, to, cls, mark });
    }
  }
  return out;
}
