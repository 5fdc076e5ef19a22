/**
 * No source comment cites a tracker issue or a commit, and nothing cites the design documents kept
 * outside the repository (tools/lint/comment-citations.ts): the comment says the reason itself, or
 * links docs/rules.md, docs/formats.md, docs/grpc.md. The second block proves the check sees each
 * kind of citation and leaves the repository's own references, fault codes and UIDs alone.
 */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { citationsIn, formatCitation, repoCitations } from './comment-citations.ts';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
// Built from parts so that this file's own text cites nothing.
const ISSUE = ['iss', 'ue'].join('');
const COMMIT = ['com', 'mit'].join('');
const MD = ['.', 'md'].join('');
const SHARED = ['..', 'shared', 'spec'].join('/');
const FORMATS = 'formats' + MD;
const BEHAVIOR = 'behavior' + MD;
const ROW = (b: string, n: number): string => `B${b} row ${n}`;
const CAT = (s: string, n: number): string => `${s} #${n}`;

describe('comment citations', () => {
  it('no comment in the repository cites an issue number, a commit or an outside document', () => {
    const found = repoCitations(REPO);
    expect(found.map(formatCitation)).toEqual([]);
  }, 60_000);

  describe('the check', () => {
    const lines = (path: string, text: string): number[] => citationsIn(path, text).map((c) => c.line);

    it('finds "issue N" and "commit <hex>" in line, block and doc comments, and in # comments', () => {
      const ts = [
        'const a = 1; // the breaker (' + ISSUE + ' 12 item 2)',
        '/**',
        ' * The journal (' + ISSUE + 's #16): shared.',
        ' * so ' + COMMIT + ' a671f36 had set it to 0.',
        ' */',
        'export const b = /* ' + ISSUE + ' 3 */ 2;',
        'const c = `' + ISSUE + ' 4`; // a string is not a comment',
      ].join('\n');
      expect(lines('x.ts', ts)).toEqual([1, 3, 4, 6]);
      expect(lines('x.mjs', 'const v = 1; // ' + COMMIT + ' `40bc27dd`\n')).toEqual([1]);
      expect(lines('x.sh', 'echo "#nope"\nset -e # ' + ISSUE + ' 10\n')).toEqual([2]);
      expect(lines('values.yaml', 'a: 1\n  # where it stopped (' + ISSUE + ' 10)\nb: "x#y"\n')).toEqual([2]);
    });

    it('finds spec citations by file name, folder, decision-table row and catalogue row, in comments of every kind', () => {
      const ts = [
        `// ${FORMATS} 3.5`,
        '/**',
        ` * the decision (${ROW('6', 11)}: job level)`,
        ` * and ${CAT('A.6', 46)}, also ${CAT('A.3', 20)}-#25`,
        ' */',
        `const x = 1; /* ${SHARED}/${BEHAVIOR} */`,
        `// note ${['E', '6'].join('.')}, ${ROW('1', 30).replace('row', 'rows')}`,
      ].join('\n');
      expect(lines('policy/x.ts', ts)).toEqual([1, 3, 4, 6, 7]);
      expect(lines('charts/values.yaml', `a: 1 # see ${BEHAVIOR}\n`)).toEqual([1]);
      expect(lines('grpc/protos/x.proto', `syntax = "proto3";\n// written from grpc${MD}\n`)).toEqual([2]);
      expect(lines('tools/x/main.go', `package main\n\n// readers (${FORMATS} 3.1)\n`)).toEqual([3]);
      expect(lines('schemas/x/x.schema.json', `{\n  "$comment": "shape (${FORMATS} 1.2)"\n}\n`)).toEqual([2]);
    });

    it('finds spec citations in the string literals of product code, not of tests or tools', () => {
      const src = [
        `const a = 'left to the operator (${CAT('A.6', 41)})';`,
        'const b = `${row}: ' + ROW('6', 11) + '`;',
        `const c = "see ${FORMATS}";`,
      ].join('\n');
      expect(lines('policy/jobs/x.ts', src)).toEqual([1, 2, 3]);
      expect(lines('cli/explain.ts', src)).toEqual([1, 2, 3]);
      expect(lines('policy/jobs/x.test.ts', src)).toEqual([]);
      expect(lines('tools/x/y.ts', src)).toEqual([]);
    });

    it('names file and line, and says what to cite instead', () => {
      const [c] = citationsIn('policy/jobs/x.ts', `const a = 1;\n// ${CAT('A.6', 46)}\n`);
      expect(formatCitation(c!)).toMatch(/^policy\/jobs\/x\.ts:2: cites a document outside the repository; cite docs\/rules\.md/);
    });

    it("leaves the repository's own references, fault codes, UIDs and the plain words alone", () => {
      const ts = [
        '// docs/rules.md#decision.job-level, docs/formats.md#check-code, docs/grpc.md#transport',
        '// fault code 80E18402 (hex), 0x08520003, uid 3f2a9c1e-4b6d-4e8f-9a0b-1c2d3e4f5a6b',
        '// the write-ahead ' + COMMIT + 's together; an ' + ISSUE + ' with the lease; sha 1a2b3c4d5e6f',
        '/** an ' + ISSUE + ' of 3 nodes; ' + COMMIT + ' deadbeef-like words: the ' + COMMIT + ' path */',
        "const uid = 'a671f36e-0000'; const code = '80E18402'; const r = 'decision.job-level';",
        "const s = '[recover.fsm #13] in Ascend910B2 rows'; // row 9 of our table, B2 board",
      ].join('\n');
      expect(lines('policy/y.ts', ts)).toEqual([]);
      expect(lines('README.md', '<!-- ' + ISSUE + ' 3 -->')).toEqual([]);
    });
  });
});
