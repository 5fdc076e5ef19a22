/**
 * `--recovery-timings`: overrides of the process-level recovery FSM's waits (ms), as a flag so the
 * tests tune the controller the way production is configured (nothing injected). Keys are the
 * RecoveryTimings fields without their `Ms` suffix; the report timeout has its own flag.
 */
import type { RecoveryTimings } from './recovery-types.ts';

export const RECOVERY_TIMING_KEYS = [
  'flush', 'preExitWait', 'rackWait', 'forceRelease', 'inPlaceCheck', 'hcclConverge', 'scaleInWait', 'inPlaceClear',
  'scheduleCheck', 'restartAll', 'retryRunning', 'processControl',
] as const;

const KEY = `(?:${RECOVERY_TIMING_KEYS.join('|')})=\\d{1,9}`;
/** Empty, or `key=ms` pairs separated by commas (options.ts checks it at start). */
export const RECOVERY_TIMINGS_PATTERN = new RegExp(`^(?:${KEY}(?:,${KEY})*)?$`);

/** The overrides in a flag value already checked against RECOVERY_TIMINGS_PATTERN. */
export function parseRecoveryTimings(raw: string): Partial<RecoveryTimings> {
  const out: Partial<Record<keyof RecoveryTimings, number>> = {};
  for (const pair of raw.split(',').filter((p) => p !== '')) {
    const [k, v] = pair.split('=') as [string, string];
    out[`${k}Ms` as keyof RecoveryTimings] = Number(v);
  }
  return out;
}
