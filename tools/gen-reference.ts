/**
 * Prints the configuration and metrics reference tables of the README from the code
 * (controllers/options.ts FLAGS, telemetry/metrics.ts). `node tools/gen-reference.ts`.
 */
import { FLAGS } from '../controllers/options.ts';
import { Metrics } from '../telemetry/metrics.ts';

export function flagsTable(): string {
  const rows = Object.entries(FLAGS).map(([name, s]) => {
    const spec = s as { type: string; default: unknown; help: string; env?: string; min?: number; max?: number; choices?: readonly string[] };
    const range = spec.choices !== undefined ? spec.choices.join(' \\| ') : spec.min !== undefined ? `${spec.min}..${spec.max}` : '';
    return `| \`--${name}\` | ${spec.type} | \`${JSON.stringify(spec.default)}\` | ${range} | ${spec.env ?? ''} | ${spec.help.replace(/\|/g, '\\|')} |`;
  });
  return ['| flag | type | default | range | env | meaning |', '| --- | --- | --- | --- | --- | --- |', ...rows].join('\n');
}

export async function metricsTable(): Promise<string> {
  const m = new Metrics({ processMetrics: false });
  const rows = (await m.registry.getMetricsAsJSON()).map((x) => {
    const labels = ((x as { aggregator?: string; values?: Array<{ labels: object }> }).values ?? []).length > 0 ? '' : '';
    return `| \`${x.name}\` | ${x.type} | ${x.help}${labels} |`;
  });
  return ['| metric | type | meaning |', '| --- | --- | --- |', ...rows].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${flagsTable()}\n\n${await metricsTable()}\n`);
}
