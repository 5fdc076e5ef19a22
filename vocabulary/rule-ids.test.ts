/**
 * The rule ids the code can print and the headings of docs/rules.md are the same set, so every id in
 * a reason can be looked up, and the reference documents nothing the code cannot name.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DECISION_ROW_RULE, RULE_IDS, decisionRule } from './rule-ids.ts';

const DOC = resolve(dirname(fileURLToPath(import.meta.url)), '../docs/rules.md');

/** The `### <a id="<id>"></a><id>` headings of the reference, in order; a wrong anchor is kept as `anchor!=id`. */
function headings(): string[] {
  return readFileSync(DOC, 'utf8').split('\n').flatMap((l) => {
    const m = /^### (?:<a id="([^"]*)"><\/a>)?(\S+)\s*$/.exec(l);
    if (m === null) return [];
    return [m[1] === undefined || m[1] === m[2] ? m[2]! : `${m[1]}!=${m[2]!}`];
  });
}

describe('rule ids', () => {
  it('every id in vocabulary/rule-ids.ts has a heading in docs/rules.md', () => {
    const doc = new Set(headings());
    expect(RULE_IDS.filter((id) => !doc.has(id))).toEqual([]);
  });

  it('every heading of docs/rules.md is an id in vocabulary/rule-ids.ts', () => {
    const ids = new Set<string>(RULE_IDS);
    expect(headings().filter((h) => !ids.has(h))).toEqual([]);
  });

  it('every heading carries an explicit anchor equal to its id (GitHub drops the dot from a heading slug)', () => {
    const lines = readFileSync(DOC, 'utf8').split('\n').filter((l) => l.startsWith('### '));
    expect(lines.filter((l) => !/^### <a id="([^"]+)"><\/a>\1$/.test(l))).toEqual([]);
  });

  it('ids are unique, `area.short-name` shaped, and the reference has each heading once', () => {
    expect(new Set(RULE_IDS).size).toBe(RULE_IDS.length);
    expect(RULE_IDS.filter((id) => !/^[a-z]+\.[a-z0-9]+(-[a-z0-9]+)*$/.test(id))).toEqual([]);
    const h = headings();
    expect(h.filter((x, i) => h.indexOf(x) !== i)).toEqual([]);
  });

  it('each row of the decision table has its own rule', () => {
    const rows = Object.values(DECISION_ROW_RULE);
    expect(new Set(rows).size).toBe(12);
    expect(decisionRule(11)).toBe('decision.job-level');
    expect(decisionRule(13)).toBeUndefined();
  });
});
