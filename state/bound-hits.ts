/**
 * How state/ reports a resource bound that bites without doing I/O itself: the wiring passes
 * telemetry/bounds.ts's BoundReporter, which satisfies this port (it counts and logs). `B` names the
 * bound as it appears in the `bound` label; tsc checks at the wiring that it is one of BOUNDS.
 */
export interface BoundHits<B extends string> {
  hit(bound: B, msg: string, fields: object, n: number): void;
}
