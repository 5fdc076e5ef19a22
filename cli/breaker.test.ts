import { sourceLines } from './breaker.ts';

describe('kubectl clusterd breaker status: where the counts came from', () => {
  it('lists per scope and kind the sources, largest first; nothing when the state has none', () => {
    expect(sourceLines([
      { scope: 'cluster', tripped: true, trippedAt: null, reason: '', held: 0, sources: { chips: { 'device-info': 41, 'public-fault tenant-a/pf-flood': 600 }, nodes: {}, jobs: { 'device-info': 1 } } },
      { scope: 'superpod-1', tripped: false, trippedAt: null, reason: '', held: 0 },
    ])).toBe('counted by source:\n  cluster chips: public-fault tenant-a/pf-flood 600, device-info 41\n  cluster jobs: device-info 1\n');
    expect(sourceLines([{ scope: 'cluster', tripped: false, trippedAt: null, reason: '', held: 0 }])).toBe('');
  });
});
