/** Human tables by default; `-o json|yaml` print the same data for scripts. */
import { stringify } from 'yaml';
import { CliError, EXIT } from './errors.ts';

export type Format = 'table' | 'json' | 'yaml';

export function parseFormat(v: string | undefined): Format {
  if (v === undefined || v === '' || v === 'table' || v === 'wide') return 'table';
  if (v === 'json' || v === 'yaml') return v;
  throw new CliError(`unknown output format ${JSON.stringify(v)}: use json or yaml (default: a table)`, EXIT.usage);
}

/** Left-aligned columns, two spaces apart, upper-case headers (as kubectl get). */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('   ').trimEnd();
  return [line(headers.map((h) => h.toUpperCase())), ...rows.map(line)].join('\n') + '\n';
}

export function emit(format: Format, data: unknown, human: () => string): void {
  if (format === 'json') process.stdout.write(JSON.stringify(data, null, 2) + '\n');
  else if (format === 'yaml') process.stdout.write(stringify(data));
  else process.stdout.write(human());
}

export const ago = (ms: number, nowMs: number): string => {
  const s = Math.max(0, Math.round((nowMs - ms) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
};
