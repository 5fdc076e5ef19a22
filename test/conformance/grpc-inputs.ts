/**
 * gRPC inputs of conformance scenarios, sent with ClusterD's own protos from the snapshot:
 * - the TaskD client (tools/taskd-client, Go, MindCluster's generated Recover stubs), whose events
 *   become a record that is compared like a written object (`exchangeRecord`);
 * - `PubFault.SendPublicFault`, through grpc-js with `pubfault.proto` loaded from the snapshot.
 *
 * The exchange record keeps the order and content of every signal and every answer code. Only three
 * things are rewritten, listed here (the runner's time normalisation applies on top):
 *   1. uuids (`<hex ns>-<hex random>`, fresh per event on both sides) -> `<uuid N, R hex>`, N
 *      numbered by first appearance on that side, R the length of the random part: which signals
 *      share a uuid, and its format, are still compared;
 *   2. event times (`t`) are left out: timing is not compared, order is;
 *   3. a signal's faultRanks and nodeRankIds are compared sorted: ClusterD builds nodeRankIds by
 *      ranging over a Go map (GetNodeRankIdsByRankIds, pkg/domain/common/utils.go), so their order
 *      is random there (seen in CI: [1 0] on one run, [0 1] on another).
 * Keep-alives are left out (a timer, not an exchange). Order is compared only where one stream or
 * one handler fixes it: the signals are one sequence; the reports one sequence per rpc (the client
 * answers a pause signal and a switch notify in goroutines of their own, so ReportStopComplete and
 * ReplySwitchNicResult come in either order when the two messages arrive together, as they do from
 * ClusterD); the O&M events one sequence per channel: the operator's answers and the result stream
 * per rpc, TaskD's stress-test and NIC-switch notify streams. In O&M texts the job's UID (different
 * on each side) reads `<job uid>` and runs of blanks one blank (protobuf-go's text format puts one
 * or two, at random).
 */
import { join } from 'node:path';
import { loadSync } from '@grpc/proto-loader';
import { credentials, loadPackageDefinition, type Client, type ServiceClientConstructor } from '@grpc/grpc-js';
import { LOADER_OPTIONS } from '../../grpc/protos.ts';
import { MINDCLUSTER_SRC } from '../../tools/clusterd-peer/clusterd-peer.ts';
import type { PubFaultInfo } from '../../schemas/public-fault/public-fault.ts';
import type { ClientEvent } from '../integration/recovery-real-client.ts';
import type { Fields } from './collect.ts';

const UUID = /^([0-9A-F]{1,16})-([0-9a-f]*)$/;

/** Collapses runs of the same text: `a, a, b` -> `a ×2, b`. */
function collapse(items: readonly string[]): string {
  const out: Array<[string, number]> = [];
  for (const i of items) {
    const last = out.at(-1);
    if (last !== undefined && last[0] === i) last[1]++;
    else out.push([i, 1]);
  }
  return out.map(([t, n]) => (n === 1 ? t : `${t} ×${n}`)).join(', ');
}

/** The TaskD client's events as compared fields (see the file comment for what is rewritten). */
export function exchangeRecord(events: readonly ClientEvent[]): Fields {
  const uuids = new Map<string, string>();
  const uuid = (u: string | undefined): string => {
    if (u === undefined || u === '') return '""';
    const m = UUID.exec(u);
    if (m === null) return JSON.stringify(u);
    let token = uuids.get(u);
    if (token === undefined) { token = `<uuid ${uuids.size + 1}, ${m[2]!.length} hex>`; uuids.set(u, token); }
    return token;
  };
  const f: Fields = {};
  const session: string[] = [];
  let signals = 0;
  const pad = (n: number) => String(n).padStart(2, '0');
  // One counter per sequence (see the file comment): `report <rpc>`, `om <rpc> answer|result`, `notify <kind>`.
  const seq = new Map<string, number>();
  const next = (name: string): string => { const n = (seq.get(name) ?? 0) + 1; seq.set(name, n); return `${name} ${pad(n)}`; };
  const text = (t: string | undefined): string => (t ?? '').replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<job uid>').replace(/\s+/g, ' ');
  for (const e of events) {
    switch (e.event) {
      case 'init': case 'register':
        session.push(`${e.event} ${e.error ? `error ${e.error}` : `code ${e.code ?? 0}`}`);
        break;
      case 'subscribe': session.push('subscribed'); break;
      case 'stream-end': session.push(`stream ended${e.error ? ` (${e.error.replace(/\s+/g, ' ')})` : ''}`); break;
      case 'signal': {
        const ranks = (e.faultRanks ?? []).map((r) => `${r.rankId}:${r.faultType}`).sort().join(' ');
        const nodeRanks = [...(e.nodeRankIds ?? [])].sort((a, b) => Number(a) - Number(b) || a.localeCompare(b)).join(' ');
        const extra = (e as { extraParams?: string; timeout?: number });
        f[`signal ${pad(++signals)}`] = [
          e.signalType, `uuid=${uuid(e.uuid)}`, `actions=[${(e.actions ?? []).join('|')}]`, `changeStrategy=${e.changeStrategy ?? ''}`,
          `faultRanks=[${ranks}]`, `nodeRankIds=[${nodeRanks}]`, `timeout=${extra.timeout ?? 0}`, `extraParams=${JSON.stringify(extra.extraParams ?? '')}`,
        ].join(' ');
        break;
      }
      case 'report':
        f[next(`report ${e.rpc ?? ''}`)] = `${e.error ? `error ${e.error}` : `code ${e.code ?? 0}`}`;
        break;
      case 'om':
        f[next(`om ${e.rpc ?? ''} answer`)] = `${e.error ? `error ${text(e.error)}` : `code ${e.code ?? 0} info ${text(e.info)}`}`;
        break;
      case 'om-result':
        f[next(`om ${e.rpc ?? ''} result`)] = `${e.msg !== undefined ? `msg ${text(e.msg)}` : `end ${text(e.end ?? e.error)}`}`;
        break;
      case 'stress-notify': {
        const params = Object.entries(e.params ?? {}).sort((a, b) => Number(a[0]) - Number(b[0])).map(([r, ops]) => `${r}:${ops.join('|')}`).join(' ');
        f[next('notify stress test')] = `[${params}]`;
        break;
      }
      case 'switch-notify':
        f[next('notify switch nic')] = `ranks=[${(e.ranks ?? []).join(' ')}] ops=[${(e.ops ?? []).join(' ')}]`;
        break;
      default: break; // keepalive
    }
  }
  f.session = collapse(session);
  return f;
}

let pubFaultCtor: ServiceClientConstructor | undefined;

/** ClusterD's PubFault service from the snapshot's pubfault.proto (no package: a top-level service). */
function pubFaultClient(target: string): Client {
  if (pubFaultCtor === undefined) {
    const file = join(MINDCLUSTER_SRC, 'component', 'clusterd', 'pkg', 'interface', 'grpc', 'pubfault', 'pubfault.proto');
    pubFaultCtor = loadPackageDefinition(loadSync(file, LOADER_OPTIONS)).PubFault as ServiceClientConstructor;
  }
  return new pubFaultCtor(target, credentials.createInsecure());
}

/** The public-fault payload as a PublicFaultRequest (nulls of the ConfigMap form are empty lists / maps). */
export function publicFaultRequest(p: PubFaultInfo): Record<string, unknown> {
  return {
    id: p.id, timestamp: p.timestamp, version: p.version, resource: p.resource,
    faults: p.faults.map((x) => ({
      faultId: x.faultId, faultType: x.faultType, faultCode: x.faultCode, faultTime: x.faultTime, assertion: x.assertion,
      faultLocation: x.faultLocation ?? {}, description: x.description,
      influence: (x.influence ?? []).map((i) => ({ nodeName: i.nodeName, nodeSN: i.nodeSN ?? '', deviceIds: i.deviceIds ?? [] })),
    })),
  };
}

/** One SendPublicFault call; resolves with `code <n>` (or `error <grpc status>`), the `info` left out. */
export async function sendPublicFault(target: string, request: Record<string, unknown>): Promise<string> {
  const c = pubFaultClient(target);
  try {
    return await new Promise<string>((resolve) => {
      const call = (c as unknown as Record<string, (req: unknown, opts: unknown, cb: (err: { code?: number } | null, res?: { code?: number }) => void) => void>).SendPublicFault!;
      call.call(c, request, { deadline: Date.now() + 10_000 }, (err, res) => resolve(err ? `error ${err.code ?? '?'}` : `code ${res?.code ?? 0}`));
    });
  } finally {
    c.close();
  }
}
