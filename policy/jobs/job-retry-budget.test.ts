import { consumeRetry, remainRetryTimesEntry, retryAllowed, syncRetryBudget } from './job-retry-budget.ts';
import type { RemainRetryTimes } from '../../schemas/vcjob-fault-npu/vcjob-fault-npu.ts';

describe('retry budget', () => {
  it('initialises once per job UID and is dropped when disabled', () => {
    const b = syncRetryBudget(undefined, 'u1', 2);
    expect(b).toEqual({ uid: 'u1', times: 2 });
    expect(syncRetryBudget({ uid: 'u1', times: 1 }, 'u1', 2)).toEqual({ uid: 'u1', times: 1 });
    expect(syncRetryBudget({ uid: 'u1', times: 0 }, 'u2', 2)).toEqual({ uid: 'u2', times: 2 });
    expect(syncRetryBudget(b, 'u1', 0)).toBeUndefined();
    expect(syncRetryBudget(undefined, 'u1', 500)).toEqual({ uid: 'u1', times: 100 });
  });

  it('allows while budget is left, and spends one per restart', () => {
    let b = syncRetryBudget(undefined, 'u1', 2)!;
    expect(retryAllowed(b, 2).allowed).toBe(true);
    b = consumeRetry(consumeRetry(b));
    expect(b.times).toBe(0);
    expect(retryAllowed(b, 2)).toMatchObject({ allowed: false });
    expect(consumeRetry(b).times).toBe(0);
    expect(retryAllowed(undefined, 0).allowed).toBe(false);
  });

  it('renders the remain-retry-times entry of vcjob-fault-npu-cm', () => {
    const e: RemainRetryTimes = remainRetryTimesEntry({ uid: 'u1', times: 1 });
    expect(e).toEqual({ UUID: 'u1', Times: 1 });
  });
});
