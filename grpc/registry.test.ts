import { Code, status } from './codes.ts';
import type { StreamCloseReason } from './handlers.ts';
import { FaultRegistry, RecoverRegistry, clientKind, type Closable } from './registry.ts';

const closable = (id: number, log: Array<[number, StreamCloseReason]>): Closable => ({ id, close: (r) => void log.push([id, r]) });
const ok = () => status(Code.OK, 'ok');

describe('RecoverRegistry', () => {
  const jobs = new Set(['j1', 'j2', 'j3']);
  const make = (max = 10) => new RecoverRegistry({ jobExists: (id) => jobs.has(id), maxServeJobs: max, now: () => 42 });
  const taskd = (jobId: string) => ({ jobId, role: 'taskd' });

  it('runs concurrent Inits of one job once', async () => {
    const r = make();
    let calls = 0;
    const decide = async () => (calls++, await new Promise((res) => setTimeout(res, 5)), ok());
    const replies = await Promise.all([r.init(taskd('j1'), decide), r.init(taskd('j1'), decide)]);
    expect(replies.map((s) => s.code)).toEqual([0, 0]);
    expect(calls).toBe(1);
    expect(r.entry('j1')).toMatchObject({ initialized: true, registered: false, initializedAtMs: 42, kind: 'taskd' });
  });

  it('does not keep entries for refused or unknown jobs', async () => {
    const r = make();
    expect((await r.init(taskd('nope'), ok)).code).toBe(Code.OperatePodGroupError);
    expect((await r.init(taskd('j1'), () => status(403, 'off'))).code).toBe(403);
    expect(r.entries()).toEqual([]);
  });

  it('counts in-flight registrations against the cap', async () => {
    const r = make(1);
    await r.init(taskd('j1'), ok);
    await r.init(taskd('j2'), ok);
    const slow = r.register(taskd('j1'), async () => (await new Promise((res) => setTimeout(res, 5)), ok()));
    expect((await r.register(taskd('j2'), ok)).code).toBe(Code.OutOfMaxServeJobs);
    expect((await slow).code).toBe(0);
    expect(r.registeredCount()).toBe(1);
  });

  it('a handler refusal (502) leaves the job unregistered', async () => {
    const r = make();
    await r.init(taskd('j1'), ok);
    expect((await r.register(taskd('j1'), () => status(Code.OperatePodGroupError, 'patch failed'))).code).toBe(502);
    expect(r.isRegistered('j1')).toBe(false);
  });

  it('replaces streams, detaches only the current one, and forgets jobs with their streams', async () => {
    const r = make();
    const log: Array<[number, StreamCloseReason]> = [];
    await r.init(taskd('j1'), ok);
    await r.register(taskd('j1'), ok);
    r.attachStream(taskd('j1'), closable(1, log));
    r.attachStream({ jobId: 'j1', role: 'master agent' }, closable(2, log));
    expect(log).toEqual([[1, 'replaced']]);
    r.detachStream('j1', closable(1, log));
    expect(r.entry('j1')).toMatchObject({ streamId: 2, subscriptions: 2, role: 'master agent', kind: 'master agent' });
    expect(r.attachSideStream('j1', closable(3, log))).toBe('ok');
    expect(r.attachSideStream('j2', closable(4, log))).toBe('unregistered');
    r.forget('j1');
    expect(log).toEqual([[1, 'replaced'], [2, 'forgotten'], [3, 'forgotten']]);
    expect(r.entry('j1')).toBeUndefined();
    expect((await r.register(taskd('j1'), ok)).code).toBe(Code.UnInit);
  });

  it('classifies roles', () => {
    expect([clientKind('taskd'), clientKind('master agent'), clientKind('Taskd')]).toEqual(['taskd', 'master agent', 'other']);
  });
});

describe('FaultRegistry', () => {
  it('keys publishers by (jobId, role); re-register ends the old stream; caps distinct jobs', () => {
    const f = new FaultRegistry({ maxServeJobs: 2 });
    const log: Array<[number, StreamCloseReason]> = [];
    expect(f.register('a', 'r1')).toBe('ok');
    expect(f.attachStream('a', 'r1', closable(1, log))).toBe(true);
    expect(f.attachStream('a', 'r2', closable(2, log))).toBe(false);
    expect(f.register('a', 'r1')).toBe('ok');
    expect(log).toEqual([[1, 'replaced']]);
    expect(f.register('a', 'r2')).toBe('ok');
    expect(f.register('b', 'r1')).toBe('ok');
    expect(f.register('c', 'r1')).toBe('max-serve-jobs');
    expect(f.jobCount()).toBe(2);
    f.forget('a');
    expect(f.jobCount()).toBe(1);
    expect(f.register('c', 'r1')).toBe('ok');
  });
});

describe('FaultRegistry caps (a client inventing roles cannot grow the server)', () => {
  it('roles per job, publishers per client and in total: a new key is refused at its cap, a known one re-registers', () => {
    const f = new FaultRegistry({ maxRolesPerJob: 2, maxPublishersPerClient: 3, maxPublishers: 5 });
    expect(f.register('job-a', 'r1', '10.0.0.1')).toBe('ok');
    expect(f.register('job-a', 'r2', '10.0.0.1')).toBe('ok');
    expect(f.register('job-a', 'r3', '10.0.0.1')).toBe('roles-per-job');
    expect(f.register('job-a', 'r1', '10.0.0.1')).toBe('ok'); // known key: replaces
    // the cluster-wide publisher (-1) has no role cap, only the client and total caps
    expect(f.register('-1', 'mindie-a', '10.0.0.1')).toBe('ok');
    expect(f.register('-1', 'mindie-b', '10.0.0.1')).toBe('publishers-per-client');
    expect(f.clientCount('10.0.0.1')).toBe(3);
    expect(f.register('-1', 'x1', '10.0.0.2')).toBe('ok');
    expect(f.register('-1', 'x2', '10.0.0.2')).toBe('ok');
    expect(f.register('-1', 'x3', '10.0.0.3')).toBe('publishers');
    expect(f.size()).toBe(5);
    // a known key re-registered from another address moves to that address
    expect(f.register('-1', 'x2', '10.0.0.3')).toBe('ok');
    expect([f.clientCount('10.0.0.2'), f.clientCount('10.0.0.3')]).toEqual([1, 1]);
    f.forget('job-a');
    expect(f.clientCount('10.0.0.1')).toBe(1);
    expect(f.register('-1', 'mindie-b', '10.0.0.1')).toBe('ok');
  });

  it('0 = no cap (ClusterD)', () => {
    const f = new FaultRegistry();
    for (let i = 0; i < 500; i++) expect(f.register('-1', `role-${i}`, '10.0.0.9')).toBe('ok');
    expect(f.size()).toBe(500);
  });
});
