/**
 * Seeded fault histories: a seed gives the world's shape and a list of steps (fault, recovery, flap,
 * storm, controller restart, write conflicts, lost watches, time), the same list on every run.
 */
import type { NpuFaultLevel } from '../../vocabulary/fault-types.ts';
import { prng } from '../../tools/prng.ts';
import { CHIPS, type WorldSpec } from './world.ts';

/** Levels the device plugin writes (vocabulary/fault-types.ts), each with a code of that level. */
export const LEVEL_CODES: ReadonlyArray<readonly [NpuFaultLevel, string]> = [
  ['SeparateNPU', '80E18402'],
  ['RestartBusiness', '80E01801'],
  ['RestartNPU', '80CB8009'],
  ['RestartRequest', '80C98009'],
  ['FreeRestartNPU', '80E3A202'],
  ['PreSeparateNPU', '80E18005'],
  ['SubHealthFault', '80E38003'],
  ['NotHandleFault', '80818C00'],
];

export type Step =
  | { readonly kind: 'fault'; readonly node: string; readonly chip: string; readonly level: NpuFaultLevel; readonly code: string }
  | { readonly kind: 'recover'; readonly node: string; readonly chip: string }
  | { readonly kind: 'flap'; readonly node: string; readonly chip: string; readonly level: NpuFaultLevel; readonly code: string; readonly times: number; readonly periodMs: number }
  | { readonly kind: 'storm'; readonly nodes: readonly string[]; readonly chip: string; readonly level: NpuFaultLevel; readonly code: string }
  | { readonly kind: 'restart' }
  /** A fault, then the controller restarted `afterMs` later: mid-reaction (decided, deleting, recorded). */
  | { readonly kind: 'crash'; readonly node: string; readonly chip: string; readonly level: NpuFaultLevel; readonly code: string; readonly afterMs: number }
  | { readonly kind: 'conflicts'; readonly n: number; readonly status: 409 | 500; readonly what: 'configmaps' | 'pods' | 'any' }
  | { readonly kind: 'lose-watches'; readonly how: 'drop' | 'expire' | 'compact' }
  /**
   * The controller cut off from the apiserver for `ms` (requests refused, watches ended) while a chip
   * faults (or recovers, when it is faulty); `compact`: the history is compacted meanwhile, so the
   * watches come back with 410 and relist.
   */
  | { readonly kind: 'outage'; readonly node: string; readonly chip: string; readonly level: NpuFaultLevel; readonly code: string; readonly ms: number; readonly compact: boolean }
  | { readonly kind: 'wait'; readonly ms: number };

export interface History { readonly seed: number; readonly maxSteps: number; readonly world: WorldSpec; readonly steps: readonly Step[] }

export function generateHistory(seed: number, maxSteps: number): History {
  const r = prng(seed ^ 0x5eed);
  const int = (lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const jobs = Array.from({ length: int(1, 2) }, () => ({ ranks: int(1, 2) }));
  const ranks = jobs.reduce((n, j) => n + j.ranks, 0);
  const nodes = Math.min(8, ranks + int(2, 4));
  const names = Array.from({ length: nodes }, (_, i) => `node-${i}`);
  // Few chips per history, so faults, recoveries and flaps meet the same hardware.
  const chips = [CHIPS[int(0, 7)]!, CHIPS[int(0, 7)]!];
  const faulty = new Set<string>();
  const steps: Step[] = [];
  const count = int(Math.max(3, Math.floor(maxSteps / 2)), maxSteps);
  for (let i = 0; i < count; i++) {
    const x = r();
    const [level, code] = pick(LEVEL_CODES);
    const node = pick(names);
    const chip = pick(chips);
    if (x < 0.28) { steps.push({ kind: 'fault', node, chip, level, code }); faulty.add(`${node}/${chip}`); }
    else if (x < 0.48) {
      const f = [...faulty];
      if (f.length === 0) { steps.push({ kind: 'wait', ms: int(1, 60) * 1000 }); continue; }
      const [n, c] = pick(f).split('/') as [string, string];
      faulty.delete(`${n}/${c}`);
      steps.push({ kind: 'recover', node: n, chip: c });
    } else if (x < 0.58) { steps.push({ kind: 'flap', node, chip, level, code, times: int(2, 4), periodMs: int(1, 20) * 1000 }); faulty.delete(`${node}/${chip}`); }
    else if (x < 0.63) {
      const ns = names.filter(() => r() < 0.6);
      steps.push({ kind: 'storm', nodes: ns, chip, level, code });
      for (const n of ns) faulty.add(`${n}/${chip}`);
    } else if (x < 0.66) steps.push({ kind: 'restart' });
    else if (x < 0.70) {
      const [l, c] = pick(LEVEL_CODES.filter(([lv]) => lv !== 'SubHealthFault' && lv !== 'NotHandleFault'));
      // On a node holding a pod (the first ranks are on the first nodes).
      const on = names[int(0, ranks - 1)]!;
      steps.push({ kind: 'crash', node: on, chip, level: l, code: c, afterMs: int(0, 30) * 100 });
      faulty.add(`${on}/${chip}`);
    }
    else if (x < 0.78) steps.push({ kind: 'conflicts', n: int(1, 3), status: pick([409, 500] as const), what: pick(['configmaps', 'pods', 'any'] as const) });
    else if (x < 0.83) steps.push({ kind: 'lose-watches', how: pick(['drop', 'expire', 'compact'] as const) });
    else if (x < 0.88) {
      steps.push({ kind: 'outage', node, chip, level, code, ms: int(1, 20) * 1000, compact: r() < 0.5 });
      if (faulty.has(`${node}/${chip}`)) faulty.delete(`${node}/${chip}`); else faulty.add(`${node}/${chip}`);
    }
    else steps.push({ kind: 'wait', ms: int(1, 90) * 1000 });
  }
  return { seed, maxSteps, world: { seed, nodes, jobs, recreateDelayMs: int(1, 30) * 100 }, steps };
}

export const describeStep = (s: Step): string => {
  switch (s.kind) {
    case 'fault': return `fault ${s.node}/${s.chip} ${s.level} ${s.code}`;
    case 'recover': return `recover ${s.node}/${s.chip}`;
    case 'flap': return `flap ${s.node}/${s.chip} ${s.level} x${s.times} every ${s.periodMs} ms`;
    case 'storm': return `storm [${s.nodes.join(',')}] ${s.chip} ${s.level}`;
    case 'restart': return 'restart the controller';
    case 'crash': return `fault ${s.node}/${s.chip} ${s.level} ${s.code}, controller restarted ${s.afterMs} ms later`;
    case 'conflicts': return `next ${s.n} ${s.what} writes answer ${s.status}`;
    case 'lose-watches': return `watches: ${s.how}`;
    case 'outage': return `controller cut off ${s.ms} ms${s.compact ? ' (history compacted)' : ''} while ${s.node}/${s.chip} flips (${s.level} ${s.code})`;
    case 'wait': return `wait ${s.ms} ms`;
  }
};
