/**
 * What `make demo`'s stories share: numbered steps, indented lines, the commands to run yourself
 * (printed as `    $ ...`, each runs as printed from the repository root), polling, and the
 * controller's JSON log in .cluster/controller.log.
 */
import { readFileSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');
export const LOCAL_KUBECONFIG = join(REPO, '.cluster', 'kubeconfig');
export const KC = '--kubeconfig .cluster/kubeconfig';

export const bold = (s: string): string => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
let stepNo = 0;
export const step = (title: string): void => { stepNo++; console.log(`\n${bold(`[${stepNo}] ${title}`)}`); };
export const say = (s: string): void => console.log(`    ${s}`);
export const cmd = (s: string): void => console.log(`    $ ${s}`);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 60_000, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try { const v = await fn(); if (v !== undefined && v !== false) return v; } catch { /* retry */ }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Controller log lines (JSON) that match a predicate. */
export function controllerLog(match: (l: Record<string, unknown>) => boolean): Array<Record<string, unknown>> {
  const file = join(REPO, '.cluster', 'controller.log');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').flatMap((line) => {
    try { const l = JSON.parse(line) as Record<string, unknown>; return match(l) ? [l] : []; } catch { return []; }
  });
}
