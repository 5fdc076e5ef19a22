/**
 * Reviewed divergences from the real ClusterD: each one a documented clusterd-ts extension (with
 * the flag that turns it off) or a known gap with a TODO naming the divergence. Anything else the
 * conformance suite finds fails the test. Keep this list short; every entry needs a reason.
 */
import type { Allowed } from './diff.ts';

export const ALLOW_LIST: readonly Allowed[] = [
];
