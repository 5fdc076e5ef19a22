/**
 * No source comment cites a tracker issue or a commit (tools/lint/comment-citations.ts): the
 * comment says the reason itself. The second block proves the check sees a citation and leaves
 * spec citations, fault codes and UIDs alone.
 */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { citationsIn, repoCitations } from './comment-citations.ts';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
// Built from parts so that this file's own text cites nothing.
const ISSUE = ['iss', 'ue'].join('');
const COMMIT = ['com', 'mit'].join('');

describe('comment citations', () => {
  it('no comment in the repository cites an issue number or a commit', () => {
    const found = repoCitations(REPO);
    expect(found.map((c) => `${c.file}:${c.line}: ${c.text}`)).toEqual([]);
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

    it('leaves spec citations, fault codes, UIDs and the plain words alone', () => {
      const ts = [
        '// behavior.md A.6 #46, formats.md 3.5, B6 row 11, C.2',
        '// fault code 80E18402 (hex), 0x08520003, uid 3f2a9c1e-4b6d-4e8f-9a0b-1c2d3e4f5a6b',
        '// the write-ahead ' + COMMIT + 's together; an ' + ISSUE + ' with the lease; sha 1a2b3c4d5e6f',
        '/** an ' + ISSUE + ' of 3 nodes; ' + COMMIT + ' deadbeef-like words: the ' + COMMIT + ' path */',
        "const uid = 'a671f36e-0000'; const code = '80E18402';",
      ].join('\n');
      expect(lines('y.ts', ts)).toEqual([]);
      expect(lines('README.md', '<!-- ' + ISSUE + ' 3 -->')).toEqual([]);
    });
  });
});
