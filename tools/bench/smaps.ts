/**
 * Where a process's resident memory is, from /proc/<pid>/smaps (docs/benchmarks.md "Idle memory:
 * the breakdown"): RSS and PSS of each kind of mapping. Linux only.
 *
 * Kinds: the executable's own pages (for Node, the `node` binary: its code, the V8 builtins and
 * snapshot, ICU data), shared libraries, `[heap]` (glibc's main malloc arena), `[stack]` (the main
 * thread), thread stacks (an anonymous mapping right after a guard page, as pthread maps them),
 * glibc's other malloc arenas (64 MiB-aligned reservations of 64 MiB), and the rest of the
 * anonymous memory (for Node: V8's heap spaces and code range, ArrayBuffers' backing stores).
 */
import { readFileSync, readlinkSync } from 'node:fs';

export type MappingKind = 'exe' | 'libs' | 'malloc_main' | 'malloc_arenas' | 'main_stack' | 'thread_stacks' | 'anon_other' | 'other';
export const MAPPING_KINDS: readonly MappingKind[] = ['exe', 'libs', 'malloc_main', 'malloc_arenas', 'main_stack', 'thread_stacks', 'anon_other', 'other'];

export interface KindFigures { rssKiB: number; pssKiB: number }
export interface SmapsBreakdown {
  readonly rssKiB: number;
  readonly pssKiB: number;
  readonly anonKiB: number;
  readonly fileKiB: number;
  readonly threads: number;
  readonly byKind: Record<MappingKind, KindFigures>;
}

interface Mapping { start: bigint; end: bigint; perms: string; path: string; rss: number; pss: number; anon: number }

const ARENA = 64n * 1024n * 1024n;

export function parseSmaps(text: string): Mapping[] {
  const out: Mapping[] = [];
  let cur: Mapping | undefined;
  for (const line of text.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+)\s+(\S+)\s+\S+\s+\S+\s+\S+\s*(.*)$/.exec(line);
    if (head !== null) {
      cur = { start: BigInt(`0x${head[1]}`), end: BigInt(`0x${head[2]}`), perms: head[3]!, path: head[4]!.trim(), rss: 0, pss: 0, anon: 0 };
      out.push(cur);
      continue;
    }
    const kv = /^(Rss|Pss|Anonymous):\s+(\d+) kB/.exec(line);
    if (kv === null || cur === undefined) continue;
    if (kv[1] === 'Rss') cur.rss = Number(kv[2]);
    else if (kv[1] === 'Pss') cur.pss = Number(kv[2]);
    else cur.anon = Number(kv[2]);
  }
  return out;
}

/** Classifies the mappings of `smaps` text; `exe` is the path of the process's executable. */
export function classify(maps: readonly Mapping[], exe: string): Record<MappingKind, KindFigures> {
  const by = Object.fromEntries(MAPPING_KINDS.map((k) => [k, { rssKiB: 0, pssKiB: 0 }])) as Record<MappingKind, KindFigures>;
  maps.forEach((m, i) => {
    const prev = maps[i - 1];
    let kind: MappingKind;
    if (m.path === exe) kind = 'exe';
    else if (m.path.startsWith('/')) kind = 'libs';
    else if (m.path === '[heap]') kind = 'malloc_main';
    else if (m.path === '[stack]') kind = 'main_stack';
    else if (m.path !== '') kind = 'other';
    // A non-main arena: its first mapping starts on a 64 MiB boundary and, with the reserved rest
    // after it (---p), spans exactly 64 MiB.
    else if (m.perms.startsWith('rw') && m.start % ARENA === 0n && (m.end - m.start === ARENA || maps[i + 1]?.end === m.start + ARENA)) kind = 'malloc_arenas';
    // pthread stacks: a private rw mapping right after its guard page (---p, 4 KiB).
    else if (m.perms.startsWith('rw') && prev !== undefined && prev.perms.startsWith('---') && prev.end === m.start && prev.end - prev.start === 4096n && m.end - m.start >= 1024n * 1024n) kind = 'thread_stacks';
    else kind = 'anon_other';
    by[kind].rssKiB += m.rss;
    by[kind].pssKiB += m.pss;
  });
  return by;
}

/** The breakdown of a live process. */
export function smapsBreakdown(pid: number | 'self'): SmapsBreakdown {
  const maps = parseSmaps(readFileSync(`/proc/${pid}/smaps`, 'utf8'));
  const exePath = readlinkSync(`/proc/${pid}/exe`);
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const num = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? Number.NaN);
  return {
    rssKiB: maps.reduce((a, m) => a + m.rss, 0),
    pssKiB: maps.reduce((a, m) => a + m.pss, 0),
    anonKiB: num('RssAnon'),
    fileKiB: num('RssFile'),
    threads: num('Threads'),
    byKind: classify(maps, exePath),
  };
}

/** PSS of a live process from smaps_rollup (cheap), KiB. */
export function pssKiB(pid: number): number {
  const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
  return m === null ? Number.NaN : Number(m[1]);
}
