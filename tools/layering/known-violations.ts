/**
 * Layering violations that exist today and are waiting for issue 11 (steps 1-3). This list may only
 * shrink: tools/layering/layering.test.ts fails on a violation that is not here, and on an entry here
 * that is no longer violated (remove it). Never add to it to make a change pass.
 */
export interface KnownViolation {
  readonly rule: string;
  readonly from: string;
  readonly to: string;
  readonly why: string;
}

export const KNOWN_VIOLATIONS: readonly KnownViolation[] = [
  // The two state stores write their ConfigMaps themselves (with a private setTimeout retry); issue 11
  // step 1 makes every module that writes a reconciler or an action, step 2 moves the retry to the queue.
  { rule: 'only-writers-write', from: 'controllers/recovery-state-store.ts', to: 'ConfigMapWriter.ensure', why: 'issue 11 step 1: state store becomes a reconciler' },
  { rule: 'only-writers-write', from: 'controllers/recovery-state-store.ts', to: 'KubeClient.delete', why: 'issue 11 step 1: state store becomes a reconciler' },
];
