/**
 * The shipped alert rules (they must load and fire): the chart's PrometheusRule, rendered by the real helm,
 * passes `promtool check rules`, and `promtool test rules` with prometheus-rules/clusterd-ts.rules.test.yaml
 * (synthetic series: every alert firing, not firing on a quiet cluster, and not before its `for`);
 * the README's alert table names the same rules with the same expressions and durations.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml, parseAllDocuments, stringify } from 'yaml';
import { helmRunner } from '../support/helm.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const CHART = join(REPO, 'charts', 'clusterd-ts');
const UNIT_TESTS = join(REPO, 'test', 'integration', 'prometheus-rules', 'clusterd-ts.rules.test.yaml');
// As the metrics lint (telemetry/metrics.test.ts): promtool comes from Debian's `prometheus` package,
// which `make test` installs; outside CI a machine without it skips, in CI (CI=true) the test fails.
const promtool = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' }).stdout.trim();
const withPromtool = promtool !== '' || process.env.CI === 'true' ? it : it.skip;

interface Rule { alert: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> }
interface Groups { groups: Array<{ name: string; rules: Rule[] }> }
interface Doc { kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; spec?: Groups }

const helm = helmRunner('rules');
const dir = mkdtempSync(join(tmpdir(), 'clusterd-ts-rules-'));
afterAll(() => { helm.dispose(); rmSync(dir, { recursive: true, force: true }); });

async function render(extra: readonly string[]): Promise<Doc[]> {
  const r = await helm.run(['template', 'clusterd-ts', CHART, '-n', 'mindx-dl', ...extra]);
  if (r.code !== 0) throw new Error(`helm template failed: ${r.stderr}`);
  return parseAllDocuments(r.stdout).map((d) => d.toJS() as Doc | null).filter((d): d is Doc => d !== null);
}

const promtoolRun = (args: readonly string[]) => spawnSync(promtool || 'promtool', [...args], { cwd: dir, encoding: 'utf8' });

describe('alert rules shipped in the chart (PrometheusRule)', () => {
  let rules: Rule[] = [];

  beforeAll(async () => {
    const docs = await render(['--set', 'prometheusRule.enabled=true', '--set', 'prometheusRule.labels.release=prometheus']);
    const pr = docs.filter((d) => d.kind === 'PrometheusRule');
    expect(pr).toHaveLength(1);
    expect(pr[0]!.metadata.namespace).toBe('mindx-dl');
    expect(pr[0]!.metadata.labels).toEqual(expect.objectContaining({ release: 'prometheus', 'app.kubernetes.io/name': 'clusterd-ts' }));
    // What the Operator hands Prometheus: spec.groups as a rules file.
    writeFileSync(join(dir, 'rules.yaml'), stringify({ groups: pr[0]!.spec!.groups }));
    copyFileSync(UNIT_TESTS, join(dir, 'clusterd-ts.rules.test.yaml'));
    rules = pr[0]!.spec!.groups.flatMap((g) => g.rules);
  });

  it('is opt-in: the default rendering has no PrometheusRule', async () => {
    expect((await render([])).filter((d) => d.kind === 'PrometheusRule')).toEqual([]);
  });

  withPromtool('passes promtool check rules', () => {
    const r = promtoolRun(['check', 'rules', 'rules.yaml']);
    expect({ code: r.status, out: r.stdout + r.stderr }).toEqual({ code: 0, out: expect.stringContaining(`SUCCESS: ${rules.length} rules found`) });
  });

  withPromtool('passes promtool test rules: every alert fires on synthetic series and stays quiet on a healthy cluster', () => {
    const r = promtoolRun(['test', 'rules', 'clusterd-ts.rules.test.yaml']);
    expect({ code: r.status, out: r.stdout + r.stderr }).toEqual({ code: 0, out: expect.stringContaining('SUCCESS') });
  });

  it('the unit tests cover every alert firing and not firing, and every `for` before it elapses', () => {
    type AlertTest = { eval_time: string; alertname: string; exp_alerts: unknown[] };
    const tests = (parseYaml(readFileSync(UNIT_TESTS, 'utf8')) as { tests: Array<{ alert_rule_test: AlertTest[] }> }).tests.flatMap((t) => t.alert_rule_test);
    const minutes = (d: string): number => Number(d.replace(/m$/, ''));
    const missing = rules.flatMap((r) => {
      const mine = tests.filter((t) => t.alertname === r.alert);
      const gaps: string[] = [];
      if (!mine.some((t) => t.exp_alerts.length > 0)) gaps.push(`${r.alert}: never firing`);
      if (!mine.some((t) => t.exp_alerts.length === 0)) gaps.push(`${r.alert}: never quiet`);
      if (r.for !== undefined && !mine.some((t) => t.exp_alerts.length === 0 && minutes(t.eval_time) < minutes(r.for!) + 1)) gaps.push(`${r.alert}: not checked before its for`);
      return gaps;
    });
    expect(missing).toEqual([]);
  });

  it('the README\'s alert table lists exactly these rules, with their expressions and durations', () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    const table = readme.slice(readme.indexOf('| alert | rule | expression | meaning |'));
    const lines = table.split('\n');
    const rows = lines.slice(2, lines.findIndex((l) => !l.startsWith('|'))).map((l) => {
      const m = /^\| [^|]+ \| `(\w+)` \| `((?:[^`])+)`(?: for (\w+))? \|/.exec(l);
      if (m === null) throw new Error(`unreadable alert row: ${l}`);
      return { alert: m[1]!, expr: m[2]!.replaceAll('\\|', '|'), ...(m[3] === undefined ? {} : { for: m[3] }) };
    });
    expect(rows).toEqual(rules.map((r) => ({ alert: r.alert, expr: r.expr, ...(r.for === undefined ? {} : { for: r.for }) })));
  });
});
