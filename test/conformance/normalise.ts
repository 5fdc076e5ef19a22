/**
 * The only rewriting the comparison does, all in this file: time values that must differ because
 * the two controllers run a moment apart. A value is rewritten only when it lies within the run (so
 * a unit mistake, seconds for milliseconds, still shows). Millisecond values the scenario wrote into
 * an input are kept: a controller that copies an input time must copy it exactly, and one that puts
 * its own clock there shows as a difference. Second-resolution values cannot tell a copy from the
 * clock (the controller reacts within the second the input was written), so they are all rewritten.
 *
 *   1. Unix seconds (10 digits) within the run                      -> <unix-s>
 *   2. Unix milliseconds (13 digits) within the run, not an input   -> <unix-ms>
 *   3. RFC 3339 times (`2026-11-25T10:22:05Z`, fractions,
 *      offsets) within the run                                      -> <rfc3339>
 *   4. reset-config's `checkCode` (a hash over reset.json, whose
 *      UpdateTime is the writer's clock), when it is the right hash
 *      of the reset.json beside it                                  -> <checkCode of reset.json>
 *      (a wrong or differently computed hash stays as it is)
 */
import { parseTaskResetInfo, resetInfoCheckCode } from '../../schemas/reset-config/reset-config.ts';
import type { Snapshot } from './collect.ts';

export interface TimeWindow {
  readonly fromMs: number;
  readonly toMs: number;
  /** Time values (as written) that the scenario put into inputs. */
  readonly inputs: ReadonlySet<string>;
}

/** Slack around the run: Go truncates to seconds, clocks round. */
const SLACK_MS = 120_000;

export const NORMALISATIONS = [
  { name: 'unix-seconds', re: /(?<![\d.])\d{10}(?![\d.])/g, ms: (s: string) => Number(s) * 1000, token: '<unix-s>', keepInputs: false },
  { name: 'unix-milliseconds', re: /(?<![\d.])\d{13}(?![\d.])/g, ms: (s: string) => Number(s), token: '<unix-ms>', keepInputs: true },
  { name: 'rfc3339', re: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)/g, ms: (s: string) => Date.parse(s), token: '<rfc3339>', keepInputs: false },
] as const;

export function normaliseValue(v: string, w: TimeWindow): string {
  let out = v;
  for (const n of NORMALISATIONS) {
    out = out.replace(n.re, (m) => {
      if (n.keepInputs && w.inputs.has(m)) return m;
      const t = n.ms(m);
      return t >= w.fromMs - SLACK_MS && t <= w.toMs + SLACK_MS ? n.token : m;
    });
  }
  return out;
}

/** Rule 4: the checkCode field when it is the hash of the reset.json field of the same object. */
function checkCodeToken(f: Readonly<Record<string, string>>): string | undefined {
  const json = f['data reset.json'];
  const code = f['data checkCode'];
  if (json === undefined || code === undefined) return undefined;
  const parsed = parseTaskResetInfo(json);
  return parsed.ok && resetInfoCheckCode(parsed.value) === code ? '<checkCode of reset.json>' : undefined;
}

export function normalise(s: Snapshot, w: TimeWindow): Snapshot {
  const out: Snapshot = new Map();
  for (const [k, f] of s) {
    const token = checkCodeToken(f);
    out.set(k, Object.fromEntries(Object.entries(f).map(([fk, v]) => [fk, fk === 'data checkCode' && token !== undefined ? token : normaliseValue(v, w)])));
  }
  return out;
}
