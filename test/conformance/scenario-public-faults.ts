/**
 * Public faults as ClusterD handles them (application/publicfault/fault_collector.go dealFault,
 * cache.go DealDelete, domain/statistics/fault.go): one fault per node and resource + faultId,
 * whichever ConfigMap (or gRPC call) sent it; a repeated `occur` keeps the first; `recover` of a
 * fault older than 5 s deletes it at once, of a younger one when it is 5 s old, of an unknown one
 * 5 s later (whatever is there by then); `once` lasts 5 s; an influence without device ids makes
 * its fault invalid (the message's other faults stay); deleting or unlabelling a public-fault
 * ConfigMap changes nothing; statistic-fault-info is rewritten (its labels replaced) on every
 * public-fault message, and reloaded after a restart.
 *
 * Fault times lie an hour before the run, so that the kept first occurrence (ClusterD writes it
 * in seconds, which normalise.ts would blur inside the run) stays visible.
 *
 * The ConfigMaps are written where a sender writes them: in mindx-dl, one of clusterd-ts's default
 * sender namespaces (`--public-fault-namespaces`). ClusterD reads every namespace; clusterd-ts
 * refuses public-fault ConfigMaps from others and faults for nodes with no Node object (with `*` and
 * `--public-fault-unknown-nodes` it takes them as ClusterD does): the tenant-isolation integration
 * test (test/integration/tenant-public-faults.test.ts) covers those, not this comparison.
 */
import { paths } from '../../runtime/kube-client.ts';
import { PUBLIC_FAULT_LABELS, PUBLIC_FAULT_VERSION, encodePublicFault, type PubFault, type PubFaultAssertion } from '../../schemas/public-fault/public-fault.ts';
import { STATISTIC_FAULT_CM_NAME } from '../../schemas/statistic-fault/statistic-fault.ts';
import type { Scenario } from './runner.ts';
import { configMap, type Write } from './world.ts';

/** A sender namespace (the default --public-fault-namespaces has it; ClusterD reads every namespace). */
const NS = 'mindx-dl';
const HOUR_MS = 3_600_000;

const fault = (faultId: string, assertion: PubFaultAssertion, node: string, deviceIds: number[] | null, timeMs: number, code = '220001001'): PubFault => ({
  faultId, faultType: 'NPU', faultCode: code, faultTime: timeMs, assertion, faultLocation: null,
  influence: [{ nodeName: node, nodeSN: '', deviceIds }], description: 'conformance public fault',
});

/** A public-fault ConfigMap carrying `faults` (one message); labelled as a sender labels it unless `labels` says otherwise. */
const message = (name: string, faults: PubFault[], nowMs: number, labels: Record<string, string> = { ...PUBLIC_FAULT_LABELS }, resource = 'CCAE'): Write =>
  configMap(NS, name, { PublicFault: encodePublicFault({ id: `${name}-${nowMs}`, timestamp: nowMs, version: PUBLIC_FAULT_VERSION, resource, faults }) }, labels);

/** Five seconds of ClusterD's delete queue, plus its 1 s process ticker, plus the write. */
const PAST_DELETE_MS = 9_000;

export const PUBLIC_FAULTS: Scenario = {
  name: 'public-faults',
  nodes: [{ name: 'node-p' }, { name: 'node-q', prefix: 'huawei.com/npu' }],
  setup: (w, now) => [...w.specs.keys()].flatMap((n) => [...w.createNode(n, now), w.deviceInfo(n, now)]),
  steps: [
    { name: 'occur pubfault-0001 on node-p chips 0,1', writes: (_w, now) => [message('pf-a', [fault('pubfault-0001', 'occur', 'node-p', [0, 1], now - HOUR_MS)], now)] },
    {
      name: 'repeated occur of pubfault-0001 (chip 2, later time, other code)',
      writes: (_w, now) => [message('pf-a', [fault('pubfault-0001', 'occur', 'node-p', [2], now - HOUR_MS / 2, '110001022')], now)],
    },
    {
      name: 'occur and recover of pubfault-0002 in one message', settleMinMs: PAST_DELETE_MS,
      writes: (_w, now) => [message('pf-b', [fault('pubfault-0002', 'occur', 'node-q', [3], now - HOUR_MS), fault('pubfault-0002', 'recover', 'node-q', [3], now - HOUR_MS)], now)],
    },
    {
      name: 'recover of pubfault-0003 before its occur', settleMinMs: PAST_DELETE_MS,
      writes: (_w, now) => [message('pf-c', [fault('pubfault-0003', 'recover', 'node-q', [4], now - HOUR_MS)], now), message('pf-c', [fault('pubfault-0003', 'occur', 'node-q', [4], now - HOUR_MS)], now + 1)],
    },
    { name: 'once pubfault-0004 on node-q chip 5', writes: (_w, now) => [message('pf-once', [fault('pubfault-0004', 'once', 'node-q', [5], now - HOUR_MS)], now)] },
    // What each side wrote in these 8 s shows when the `once` fault went (ClusterD: after 5 s).
    { name: 'pubfault-0004 held 8 s', waitSince: 'once pubfault-0004 on node-q chip 5', ms: 8_000 },
    { name: 'recover pubfault-0001 (older than 5 s)', writes: (_w, now) => [message('pf-a', [fault('pubfault-0001', 'recover', 'node-p', [0, 1], now - HOUR_MS)], now)] },
    {
      name: 'a node-wide fault and a chip fault in one message',
      writes: (_w, now) => [message('pf-d', [fault('pubfault-0005', 'occur', 'node-q', null, now - HOUR_MS), fault('pubfault-0006', 'occur', 'node-q', [6], now - HOUR_MS)], now)],
    },
    {
      name: 'statistic-fault-info labels edited by a user',
      writes: () => [{ op: 'patch', path: paths.configMap('cluster-system', STATISTIC_FAULT_CM_NAME), body: { metadata: { labels: { team: 'ops', 'mc-statistic-fault': 'false' } } }, type: 'merge' }],
    },
    { name: 'unlabelled public-fault ConfigMap pf-e', writes: (_w, now) => [message('pf-e', [fault('pubfault-0007', 'occur', 'node-p', [7], now - HOUR_MS)], now, {})] },
    {
      name: 'pf-e labelled mc-consumer-publicfault=true',
      writes: () => [{ op: 'patch', path: paths.configMap(NS, 'pf-e'), body: { metadata: { labels: { ...PUBLIC_FAULT_LABELS } } }, type: 'merge' }],
    },
    {
      name: 'pf-e label set to false, pf-d deleted',
      writes: () => [
        { op: 'patch', path: paths.configMap(NS, 'pf-e'), body: { metadata: { labels: { 'mc-consumer-publicfault': 'false' } } }, type: 'merge' },
        { op: 'delete', path: paths.configMap(NS, 'pf-d') },
      ],
    },
    { name: 'restart both controllers', restart: true, settleMinMs: PAST_DELETE_MS },
    { name: 'recover pubfault-0006 from another ConfigMap', writes: (_w, now) => [message('pf-f', [fault('pubfault-0006', 'recover', 'node-q', [6], now - HOUR_MS)], now)] },
    {
      name: 'same fault id from another resource',
      writes: (_w, now) => [message('pf-g', [fault('pubfault-0003', 'occur', 'node-p', [3], now - HOUR_MS)], now, { ...PUBLIC_FAULT_LABELS }, 'fd-online')],
    },
    {
      name: 'recover the rest', settleMinMs: PAST_DELETE_MS,
      writes: (_w, now) => [
        message('pf-e', [fault('pubfault-0007', 'recover', 'node-p', [7], now - HOUR_MS)], now),
        message('pf-c', [fault('pubfault-0003', 'recover', 'node-q', [4], now - HOUR_MS)], now),
        message('pf-g', [fault('pubfault-0003', 'recover', 'node-p', [3], now - HOUR_MS)], now, { ...PUBLIC_FAULT_LABELS }, 'fd-online'),
      ],
    },
  ],
};
