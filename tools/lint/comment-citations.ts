/**
 * Comments say why, not where a discussion happened: a source comment must not cite a tracker
 * issue by its number or a commit by its hash, which mean nothing to a reader without that
 * history; it says the reason itself. Spec citations (formats.md 3.5,
 * behavior.md A.6 #46) are not this check's business, and neither is other hex: only the words
 * "issue N" and "commit <hex>" (a hash has a digit) are looked for, so fault codes (80E18402),
 * UIDs and hex-looking words pass.
 *
 * Comments are found with the TypeScript scanner's comment ranges for .ts/.js/.mjs/.cjs, and as
 * `#` to the end of the line for shell and YAML.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

export interface Citation { file: string; line: number; text: string }

/** The patterns, built from parts so this file does not cite anything itself. */
const CITES: readonly RegExp[] = [
  new RegExp(['\\bissues?', '\\s*#?\\d+\\b'].join(''), 'i'),
  new RegExp(['\\bcommits?', '\\s+`?(?=[a-f]*\\d)[0-9a-f]{7,40}\\b'].join(''), 'i'),
];

const SKIP_DIRS = new Set(['node_modules', 'dist', 'dist-bundle', 'coverage', '.git', '.cluster', 'bench-results']);
const SCRIPT = /\.(ts|js|mjs|cjs)$/;
const HASH_COMMENTED = /\.(sh|ya?ml)$/;

/** The comments of a script file, each with the line it starts on (1-based). */
export function scriptComments(path: string, text: string): Array<{ line: number; text: string }> {
  const kind = path.endsWith('.ts') ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false, kind);
  const seen = new Set<number>();
  const out: Array<{ line: number; text: string }> = [];
  const collect = (ranges: ts.CommentRange[] | undefined): void => {
    for (const r of ranges ?? []) {
      if (seen.has(r.pos)) continue;
      seen.add(r.pos);
      out.push({ line: sf.getLineAndCharacterOfPosition(r.pos).line + 1, text: text.slice(r.pos, r.end) });
    }
  };
  const visit = (node: ts.Node): void => {
    collect(ts.getLeadingCommentRanges(text, node.getFullStart()));
    collect(ts.getTrailingCommentRanges(text, node.getEnd()));
    for (const child of node.getChildren(sf)) visit(child);
  };
  visit(sf);
  return out.sort((a, b) => a.line - b.line);
}

/** The `#` comments of a shell or YAML file (to the end of the line; `#` inside a word is not one). */
export function hashComments(text: string): Array<{ line: number; text: string }> {
  const out: Array<{ line: number; text: string }> = [];
  text.split('\n').forEach((l, i) => {
    const m = /(^|\s)#.*$/.exec(l);
    if (m !== null) out.push({ line: i + 1, text: m[0].trim() });
  });
  return out;
}

/** The citations in one file's comments. */
export function citationsIn(path: string, text: string): Citation[] {
  const comments = SCRIPT.test(path) ? scriptComments(path, text) : HASH_COMMENTED.test(path) ? hashComments(text) : [];
  const out: Citation[] = [];
  for (const c of comments) {
    c.text.split('\n').forEach((l, i) => {
      if (CITES.some((re) => re.test(l))) out.push({ file: path, line: c.line + i, text: l.trim() });
    });
  }
  return out;
}

/** Every source file under root this check reads (generated validators excluded). */
export function sourceFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) { if (!SKIP_DIRS.has(e.name)) walk(join(dir, e.name)); continue; }
      if (!e.isFile() || e.name.endsWith('.validators.gen.ts')) continue;
      if (SCRIPT.test(e.name) || HASH_COMMENTED.test(e.name)) out.push(join(dir, e.name));
    }
  };
  walk(root);
  return out.sort();
}

/** The citations in every source file under root, with paths relative to it. */
export function repoCitations(root: string): Citation[] {
  return sourceFiles(root).flatMap((f) => citationsIn(relative(root, f), readFileSync(f, 'utf8')));
}
