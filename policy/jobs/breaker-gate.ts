/**
 * What the acting paths (the job decisions and the node isolation reconcilers) ask the blast-radius
 * breaker before a reschedule or an isolation. A port: controllers/breaker.controller.ts implements
 * it over the breaker state (policy/jobs/breaker.ts decides), so the writers do not import the wiring.
 */
import type { BreakerKind } from './breaker.ts';

export type Verdict = { readonly allowed: true } | { readonly allowed: false; readonly reason: string };

export interface BreakerGate {
  /** `source`: whose faults the action is for (policy/jobs/breaker-accounting.ts), shown in the breaker's state and trip reason. */
  admit(kind: Exclude<BreakerKind, 'chips'>, key: string, nodes: readonly string[], source?: string): Verdict;
}
