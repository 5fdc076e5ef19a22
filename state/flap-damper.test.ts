import type { FaultRecord } from '../vocabulary/fault-types.ts';
import { FlapDamper } from './flap-damper.ts';

const r: FaultRecord = { node: 'n1', device: 'Ascend910-3', source: 'npu', code: '81078603', level: 'RestartRequest', reportedLevel: 'RestartRequest', firstSeenMs: 0 };

describe('FlapDamper: recoveries are judged on the hardware\'s reports, holds added to the shown view', () => {
  it('a filter hiding and showing a fault that stays reported is not a flap', () => {
    let now = 0;
    const d = new FlapDamper({ holdMs: 30_000, recoveries: 2, windowMs: 60_000 }, () => now);
    for (let i = 0; i < 4; i++) {
      now += 1_000;
      expect(d.view('n1', [], [r])).toEqual([]); // hidden by a filter: nothing added
      now += 1_000;
      expect(d.view('n1', [r], [r])).toEqual([r]);
    }
  });

  it('hardware that recovers twice is held in the shown view until healthy for the hold', () => {
    let now = 0;
    const d = new FlapDamper({ holdMs: 30_000, recoveries: 2, windowMs: 60_000 }, () => now);
    d.view('n1', [r], [r]);
    now += 1_000; expect(d.view('n1', [], [])).toEqual([]); // first recovery: handled as ClusterD
    now += 1_000; d.view('n1', [r], [r]);
    now += 1_000; expect(d.view('n1', [], [])).toEqual([r]); // second: held
    now += 31_000; expect(d.view('n1', [], [])).toEqual([]); // healthy for the hold
  });
});
