import { FlapDamper } from './flap-damper.ts';

describe('FlapDamper: the restart budget (rule 2)', () => {
  const cfg = { holdMs: 30_000, recoveries: 2, windowMs: 60_000 };

  it('defers a restart whose causes all recovered since the job\'s last restart, within the period only', () => {
    let now = 0;
    const recovered = new Map<string, number>();
    const d = new FlapDamper(cfg, () => now, (e, t) => (recovered.get(e) ?? -1) > t);
    expect(d.deferUntil('ns/j', ['n1/Ascend910-0'])).toBeUndefined(); // first fault: restart at once
    d.restarted('ns/j', ['n1/Ascend910-0']);
    now = 1_000; recovered.set('n1/Ascend910-0', 1_000);
    now = 2_000;
    expect(d.deferUntil('ns/j', ['n1/Ascend910-0'])).toBe(30_000); // a re-fault of the same chip
    expect(d.deferUntil('ns/j', ['n1/Ascend910-0', 'n2/Ascend910-1'])).toBeUndefined(); // news elsewhere: at once
    now = 30_000;
    expect(d.deferUntil('ns/j', ['n1/Ascend910-0'])).toBeUndefined(); // the period is over
  });

  it('a job placed again on the chip it was restarted for (still faulty) restarts at most once per period; the same restart\'s next step goes on', () => {
    let now = 0;
    const d = new FlapDamper(cfg, () => now, () => false); // the chip never recovers
    expect(d.deferUntil('ns/j', ['n1/Ascend910-0'], 'u/g1')).toBeUndefined();
    d.restarted('ns/j', ['n1/Ascend910-0'], 'u/g1');
    now = 3_000;
    expect(d.deferUntil('ns/j', ['n1/Ascend910-0'], 'u/g1')).toBeUndefined(); // force after grace
    d.restarted('ns/j', ['n1/Ascend910-0'], 'u/g1');
    now = 5_000; // the new pods are on the same faulty chip: generation 2
    expect(d.deferUntil('ns/j', ['n1/Ascend910-0'], 'u/g2')).toBe(33_000);
    expect(d.deferUntil('ns/j', ['n1/Ascend910-0', 'n2/Ascend910-1'], 'u/g2')).toBeUndefined(); // news elsewhere: at once
    now = 33_000;
    expect(d.deferUntil('ns/j', ['n1/Ascend910-0'], 'u/g2')).toBeUndefined(); // once per period
    d.restarted('ns/j', ['n1/Ascend910-0'], 'u/g2');
    now = 40_000;
    expect(d.deferUntil('ns/j', ['n1/Ascend910-0'], 'u/g3')).toBe(63_000);
  });

  it('off (holdMs 0) never defers', () => {
    const d = new FlapDamper({ ...cfg, holdMs: 0 }, () => 1, () => true);
    d.restarted('ns/j', ['n1']);
    expect(d.deferUntil('ns/j', ['n1'])).toBeUndefined();
  });
});
