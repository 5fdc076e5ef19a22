/**
 * Figures, their printing (`name: value unit`, one per line, `n/a` when a figure cannot be measured
 * in this build) and the JSON report with the versions and machine facts next to them.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, freemem, loadavg, release, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { percentile } from './fixtures.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface Figure {
  readonly name: string;
  /** null = not measurable in this build or run (printed `n/a`; `note` says why). */
  readonly value: number | null;
  readonly unit: string;
  readonly scenario: string;
  readonly note?: string;
}

export class Figures {
  readonly all: Figure[] = [];
  readonly notes: string[] = [];
  /** Extra detail per scenario (samples, breakdowns) for the JSON file. */
  readonly details: Record<string, unknown> = {};
  private readonly print: (line: string) => void;

  constructor(print: (line: string) => void = (l) => process.stdout.write(`${l}\n`)) {
    this.print = print;
  }

  add(scenario: string, name: string, value: number | null, unit: string, note?: string): void {
    const v = value === null || !Number.isFinite(value) ? null : Math.round(value * 1000) / 1000;
    this.all.push({ name, value: v, unit, scenario, ...(note === undefined ? {} : { note }) });
    this.print(`${name}: ${v === null ? 'n/a' : v} ${unit}`);
    if (note !== undefined && v === null) this.note(`${name}: ${note}`);
  }

  /** p50, p90, p99 and max of a sample, in `unit` (values already in that unit). */
  addDistribution(scenario: string, base: string, samples: readonly number[] | null, unit: string, note?: string): void {
    for (const p of [50, 90, 99] as const) this.add(scenario, `${base}_p${p}_${unit}`, samples === null ? null : percentile(samples, p), unit, p === 50 ? note : undefined);
    this.add(scenario, `${base}_max_${unit}`, samples === null || samples.length === 0 ? null : Math.max(...samples), unit);
  }

  note(text: string): void {
    this.notes.push(text);
    this.print(`# ${text}`);
  }

  get(name: string): Figure | undefined {
    return this.all.find((f) => f.name === name);
  }
}

const tryRun = (bin: string, args: string[]): string => {
  try {
    return execFileSync(bin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 10_000 }).trim();
  } catch {
    return 'unknown';
  }
};

const pkgVersion = (name: string): string => {
  try {
    return (JSON.parse(readFileSync(join(REPO, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'missing';
  }
};

/** Versions of everything that shapes the figures. `binDir` holds the control-plane binaries. */
export function versions(binDir: string | undefined): Record<string, unknown> {
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string; dependencies: Record<string, string>; devDependencies: Record<string, string> };
  const bin = (name: string): string => (binDir !== undefined && existsSync(join(binDir, name)) ? join(binDir, name) : name);
  const firstLine = (s: string): string => s.split('\n')[0] ?? s;
  return {
    clusterdTs: pkg.version,
    gitCommit: tryRun('git', ['-C', REPO, 'rev-parse', 'HEAD']),
    gitDirty: tryRun('git', ['-C', REPO, 'status', '--porcelain']).split('\n').filter((l) => l.trim() !== '').length > 0,
    node: process.version,
    v8: process.versions.v8,
    kubeApiserver: binDir === undefined ? 'not used' : tryRun(bin('kube-apiserver'), ['--version']),
    etcd: binDir === undefined ? 'not used' : firstLine(tryRun(bin('etcd'), ['--version'])),
    kwok: binDir === undefined ? 'not used' : firstLine(tryRun(bin('kwok'), ['--version'])),
    packages: Object.fromEntries(Object.keys({ ...pkg.dependencies, ...pkg.devDependencies }).sort().map((n) => [n, pkgVersion(n)])),
  };
}

export function machine(): Record<string, unknown> {
  const c = cpus();
  return {
    cores: c.length,
    cpuModel: c[0]?.model ?? 'unknown',
    memoryMiB: Math.round(totalmem() / 2 ** 20),
    freeMemoryMiB: Math.round(freemem() / 2 ** 20),
    loadAverage1m: Math.round((loadavg()[0] ?? 0) * 100) / 100,
    kernel: release(),
    platform: `${process.platform}/${process.arch}`,
  };
}

export interface ReportMeta {
  readonly command: string;
  readonly options: unknown;
  readonly startedAt: string;
  readonly wallSeconds: number;
  readonly versions: Record<string, unknown>;
  readonly machineAtStart: Record<string, unknown>;
}

export function writeReport(path: string, meta: ReportMeta, figures: Figures): void {
  mkdirSync(dirname(path), { recursive: true });
  const body = {
    ...meta,
    machineAtEnd: machine(),
    figures: figures.all,
    notes: figures.notes,
    details: figures.details,
  };
  writeFileSync(path, `${JSON.stringify(body, null, 2)}\n`);
}
