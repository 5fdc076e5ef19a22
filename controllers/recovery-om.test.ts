/**
 * The O&M streams (docs/grpc.md#om) as ClusterD's channels behave (CD/application/recover/om_controller.go): the
 * notify message waits for a notify stream, a result stream takes one message and ends, one left
 * unread past the report timeout ends empty and queues a note, a reset ends every stream and drops
 * what is queued.
 */
import { VirtualTimeScheduler } from 'rxjs';
import type { SignalStream } from '../grpc/handlers.ts';
import type { JobInput } from './recovery-job.ts';
import type { JobFsm } from './recovery-job.ts';
import { OmOperations } from './recovery-om.ts';
import { initialRecoveryState } from '../policy/recovery/recovery-fsm.ts';
import { initialHotSwitchState } from '../policy/recovery/hot-switch-fsm.ts';
import type { RecoveryState } from '../policy/recovery/recovery-types.ts';
import { jobConfig } from '../test/support/recovery-fixtures.ts';

const JOB = 'job-uid';
const silent = { info() {}, warn() {}, error() {}, debug() {}, child() { return silent; } } as never;

interface FakeStream<T> extends SignalStream<T> { readonly sent: T[] }
let ids = 0;
function stream<T>(): FakeStream<T> {
  const abort = new AbortController();
  const sent: T[] = [];
  return {
    id: ++ids, client: { jobId: JOB, role: 'taskd' }, sent, signal: abort.signal,
    get closed() { return abort.signal.aborted; },
    send: async (m: T) => { if (abort.signal.aborted) return false; sent.push(m); return true; },
    end: () => abort.abort('server-ended'),
  };
}

function setUp(phase: RecoveryState['phase'] = 'INIT') {
  const scheduler = new VirtualTimeScheduler();
  const fed: JobInput[] = [];
  const recovery: RecoveryState = {
    ...initialRecoveryState({ config: jobConfig({ jobId: JOB, ranksPerPod: 2 }), timings: { reportMs: 60_000 } }),
    phase,
    om: { kind: 'stressTest', stress: { n1: { 0: [0] } }, switchRanks: [], switchOps: [], rankNode: { 0: 'n1' }, rankDevice: { 0: '0' }, isolateNodes: [], notified: false },
  };
  const job = {
    jobId: JOB, target: { key: 'ns/job' }, recovery, hotSwitch: initialHotSwitchState({ jobId: JOB, framework: 'pytorch', subHealthyStrategy: 'ignore' }),
    feed: async (i: JobInput) => { fed.push(i); return { accepted: true, machine: 'recovery', uuid: '' }; },
  } as unknown as JobFsm;
  const om = new OmOperations({ job: () => job, lookup: () => undefined, superPodId: () => undefined, notifyNodes: () => undefined, log: silent, scheduler });
  return { om, job, fed, scheduler };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('O&M streams', () => {
  it('the notify message waits for an agent\'s notify stream, then goes to it and comes back as omNotified', async () => {
    const { om, job, fed } = setUp('NotifyStressTestState');
    om.run(job, { machine: 'recovery', cmd: { type: 'notifyOm', kind: 'stressTest', id: 1, awaitResult: false }, streamId: undefined });
    await flush();
    expect(fed).toEqual([]);
    const s = stream<unknown>();
    om.notifyStream('stressTest', s);
    await flush();
    expect(s.sent).toEqual([{ stressParam: { 0: { ops: [0] } }, jobId: JOB }]);
    expect(fed).toEqual([{ machine: 'recovery', event: { type: 'omNotified', ok: true } }]);
  });

  it('a result stream takes one queued message and ends; the next waits for the next message', async () => {
    const { om, job } = setUp();
    const reply = (msg: string) => om.run(job, { machine: 'recovery', cmd: { type: 'omResponse', kind: 'stressTest', msg, id: 1, awaitResult: false }, streamId: undefined });
    reply('first');
    reply('second');
    const a = stream<{ jobID: string; msg: string }>();
    om.resultStream('stressTest', a);
    await flush();
    expect(a.sent).toEqual([{ jobID: JOB, msg: 'first' }]);
    expect(a.closed).toBe(true);
    const b = stream<{ jobID: string; msg: string }>();
    om.resultStream('stressTest', b);
    await flush();
    expect(b.sent.map((m) => m.msg)).toEqual(['second']);
    const c = stream<{ jobID: string; msg: string }>();
    om.resultStream('stressTest', c);
    await flush();
    expect(c.closed).toBe(false);
    reply('third');
    await flush();
    expect(c.sent.map((m) => m.msg)).toEqual(['third']);
  });

  it('unread past the report timeout: the stream ends empty and a note is queued for the next reader', async () => {
    const { om, scheduler } = setUp();
    const a = stream<{ jobID: string; msg: string }>();
    om.resultStream('stressTest', a);
    scheduler.flush();
    await flush();
    expect(a.closed).toBe(true);
    expect(a.sent).toEqual([]);
    const b = stream<{ jobID: string; msg: string }>();
    om.resultStream('stressTest', b);
    await flush();
    expect(b.sent.map((m) => m.msg)).toEqual(['report stress test result timeout, please check manually']);
  });

  it('a reset ends the notify and result streams and drops the queued messages', async () => {
    const { om, job } = setUp();
    const n = stream<unknown>();
    om.notifyStream('switchNic', n);
    const r = stream<{ jobID: string; msg: string }>();
    om.resultStream('stressTest', r);
    om.run(job, { machine: 'recovery', cmd: { type: 'endOmStreams', id: 1, awaitResult: false }, streamId: undefined });
    expect(n.closed && r.closed).toBe(true);
    om.run(job, { machine: 'recovery', cmd: { type: 'omResponse', kind: 'switchNic', msg: 'late', id: 2, awaitResult: false }, streamId: undefined });
    om.end(JOB);
    const after = stream<{ jobID: string; msg: string }>();
    om.resultStream('switchNic', after);
    await flush();
    expect(after.sent).toEqual([]);
  });

  it('the result stream is refused unless that operation runs', () => {
    const { om } = setUp();
    expect(om.resultRefusal('stressTest', JOB)).toBeUndefined();
    expect(om.resultRefusal('switchNic', JOB)).toBe(`jobId=${JOB} is not swtiching nic`);
  });
});
