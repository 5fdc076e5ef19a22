import { eventNameOf, truncateUtf8 } from './job-event.action.ts';

describe('job Events', () => {
  it('cuts messages to 1 KB on a character boundary', () => {
    expect(truncateUtf8('short')).toBe('short');
    const long = '故障'.repeat(400);
    const cut = truncateUtf8(long);
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(1024);
    expect(cut.endsWith('…')).toBe(true);
    expect(cut.includes('\ufffd')).toBe(false);
  });

  it('names an Event after its decision, so a replay creates nothing new', () => {
    expect(eventNameOf('llama-u1', 'u1/g1/start/00', 'FaultRescheduling')).toBe(eventNameOf('llama-u1', 'u1/g1/start/00', 'FaultRescheduling'));
    expect(eventNameOf('llama-u1', 'u1/g1/start/00', 'FaultRescheduling')).not.toBe(eventNameOf('llama-u1', 'u1/g2/start/00', 'FaultRescheduling'));
  });
});
