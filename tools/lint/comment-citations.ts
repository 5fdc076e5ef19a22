/**
 * Comments say why, not where a discussion happened, and cite only what a reader has.
 *
 * 1. A source comment must not cite a tracker issue by its number or a commit by its hash, which
 *    mean nothing to a reader without that history; it says the reason itself. Only the words
 *    "issue N" and "commit <hex>" (a hash has a digit) are looked for, so fault codes (80E18402),
 *    UIDs and hex-looking words pass.
 * 2. Nothing may cite the design documents that live outside the repository (by their file names,
 *    their folder, or their section and row numbers such as a decision-table row or a catalogue
 *    row): comments cite docs/rules.md, docs/formats.md, docs/grpc.md or a MindCluster source path
 *    instead. This applies to comments, to the string literals of product code (what the controller
 *    prints must name a rule id, vocabulary/rule-ids.ts), to protos and Go, and to JSON Schemas.
 *
 * Comments are found with the TypeScript scanner's comment ranges for .ts/.js/.mjs/.cjs, as `#` to
 * the end of the line for shell and YAML, and as `//` to the end of the line for .proto and .go.
 * Run directly (`node tools/lint/comment-citations.ts`, part of `make lint`) it prints
 * `file:line: text` per finding and exits 1 when there is one.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export interface Citation { file: string; line: number; text: string; kind: 'history' | 'spec' }

/** History citations: built from parts so this file does not cite anything itself. */
const HISTORY: readonly RegExp[] = [
  new RegExp(['\\bissues?', '\\s*#?\\d+\\b'].join(''), 'i'),
  new RegExp(['\\bcommits?', '\\s+`?(?=[a-f]*\\d)[0-9a-f]{7,40}\\b'].join(''), 'i'),
];

/** The outside documents' names; `docs/formats.md` and `docs/grpc.md` of this repository are fine. */
const SPEC_DOCS = ['formats', 'behavior', 'style', 'grpc', 'anchors', 'testinfra'];
/** Spec citations, also built from parts. */
const SPEC: readonly RegExp[] = [
  new RegExp(`(?<![\\w/.-])(?:${SPEC_DOCS.join('|')})${'\\.'}md\\b`),
  new RegExp(['shared', 'spec'].join('\\/')),
  new RegExp(['\\bB\\d+', ' rows?\\b'].join('')),
  new RegExp(['\\b[A-G]\\.\\d+', '\\s?#\\d+'].join('')),
  new RegExp(['\\bE', '\\.\\d+\\b'].join('')),
];

const SKIP_DIRS = new Set(['node_modules', 'dist', 'dist-bundle', 'coverage', '.git', '.cluster', 'bench-results']);
const SCRIPT = /\.(ts|js|mjs|cjs)$/;
const HASH_COMMENTED = /\.(sh|ya?ml)$/;
const SLASH_COMMENTED = /\.(proto|go)$/;
const SCHEMA = /\.schema\.json$/;
/** Folders whose string literals reach outputs (explain, Events, DecisionRecords, logs, reasons). */
const PRODUCT = /^(actions|cli|controllers|grpc|policy|reconcilers|runtime|schemas|state|telemetry|vocabulary)\/|^main\.ts$/;

interface Span { line: number; text: string }

/** The comments of a script file, each with the line it starts on (1-based). */
export function scriptComments(path: string, text: string): Span[] {
  return scriptSpans(path, text, false).comments;
}

/** Comments and (when asked) string literals of a script file, each with its first line. */
function scriptSpans(path: string, text: string, strings: boolean): { comments: Span[]; strings: Span[] } {
  const kind = path.endsWith('.ts') ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false, kind);
  const seen = new Set<number>();
  const comments: Span[] = [];
  const literals: Span[] = [];
  const lineOf = (pos: number): number => sf.getLineAndCharacterOfPosition(pos).line + 1;
  const collect = (ranges: ts.CommentRange[] | undefined): void => {
    for (const r of ranges ?? []) {
      if (seen.has(r.pos)) continue;
      seen.add(r.pos);
      comments.push({ line: lineOf(r.pos), text: text.slice(r.pos, r.end) });
    }
  };
  const visit = (node: ts.Node): void => {
    collect(ts.getLeadingCommentRanges(text, node.getFullStart()));
    collect(ts.getTrailingCommentRanges(text, node.getEnd()));
    if (strings && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node))) {
      const start = node.getStart(sf);
      literals.push({ line: lineOf(start), text: text.slice(start, node.getEnd()) });
    }
    for (const child of node.getChildren(sf)) visit(child);
  };
  visit(sf);
  const byLine = (a: Span, b: Span): number => a.line - b.line;
  return { comments: comments.sort(byLine), strings: literals.sort(byLine) };
}

/** Comments that run to the end of the line after `marker` (`#` or `//`; inside a word it is not one). */
function lineComments(text: string, marker: '#' | '//'): Span[] {
  const re = marker === '#' ? /(^|\s)#.*$/ : /(^|\s)\/\/.*$/;
  const out: Span[] = [];
  text.split('\n').forEach((l, i) => {
    const m = re.exec(l);
    if (m !== null) out.push({ line: i + 1, text: m[0].trim() });
  });
  return out;
}

/** The `#` comments of a shell or YAML file (to the end of the line; `#` inside a word is not one). */
export function hashComments(text: string): Span[] {
  return lineComments(text, '#');
}

/** Every line of a file as a span (JSON Schemas: their descriptions are their comments). */
const allLines = (text: string): Span[] => text.split('\n').map((l, i) => ({ line: i + 1, text: l }));

/** The citations in one file: history citations in comments, spec citations in comments and product strings. */
export function citationsIn(path: string, text: string): Citation[] {
  const script = SCRIPT.test(path);
  const spans = script ? scriptSpans(path, text, PRODUCT.test(path) && !/\.test\.ts$/.test(path)) : undefined;
  const comments = spans?.comments
    ?? (HASH_COMMENTED.test(path) ? hashComments(text) : SLASH_COMMENTED.test(path) ? lineComments(text, '//') : SCHEMA.test(path) ? allLines(text) : []);
  const out: Citation[] = [];
  const scan = (list: readonly Span[], history: boolean): void => {
    for (const c of list) {
      c.text.split('\n').forEach((l, i) => {
        const kind = history && HISTORY.some((re) => re.test(l)) ? 'history' : SPEC.some((re) => re.test(l)) ? 'spec' : undefined;
        if (kind !== undefined) out.push({ file: path, line: c.line + i, text: l.trim(), kind });
      });
    }
  };
  scan(comments, !SCHEMA.test(path));
  scan(spans?.strings ?? [], false);
  return out.sort((a, b) => a.line - b.line);
}

/** Every source file under root this check reads (generated validators excluded). */
export function sourceFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) { if (!SKIP_DIRS.has(e.name)) walk(join(dir, e.name)); continue; }
      if (!e.isFile() || e.name.endsWith('.validators.gen.ts')) continue;
      if (SCRIPT.test(e.name) || HASH_COMMENTED.test(e.name) || SLASH_COMMENTED.test(e.name) || SCHEMA.test(e.name)) out.push(join(dir, e.name));
    }
  };
  walk(root);
  return out.sort();
}

/** The citations in every source file under root, with paths relative to it. */
export function repoCitations(root: string): Citation[] {
  return sourceFiles(root).flatMap((f) => citationsIn(relative(root, f), readFileSync(f, 'utf8')));
}

/** One finding as the linter prints it. */
export function formatCitation(c: Citation): string {
  const why = c.kind === 'history'
    ? 'cites a tracker issue or a commit; say the reason instead'
    : 'cites a document outside the repository; cite docs/rules.md, docs/formats.md, docs/grpc.md or a MindCluster path';
  return `${c.file}:${c.line}: ${why}: ${c.text}`;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const found = repoCitations(resolve(dirname(fileURLToPath(import.meta.url)), '../..'));
  for (const c of found) console.error(formatCitation(c));
  process.exitCode = found.length > 0 ? 1 : 0;
}
