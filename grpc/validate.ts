/**
 * Input checks of the gRPC transport. ClusterD's own rules: the fault query's jobId (8-128 chars, no
 * CJK), and the public-fault request rules (docs/rules.md#ingest.public-faults, docs/formats.md#public-fault). Our additions, which
 * ClusterD does not have: an upper bound on Recover identifiers and on report list sizes, so that a
 * hostile but < 4 MiB message cannot blow up the state machine or the logs.
 */
import type { Parsed } from '../schemas/parsed.ts';
import { ok, rejected } from '../schemas/parsed.ts';
import type { FaultRank, PublicFaultRequest } from './messages.ts';

export const MAX_ID_LENGTH = 128;
export const MAX_ROLE_LENGTH = 128;
/** Largest fault-rank / isolate-rank list a report may carry (ranks of the largest job, with margin). */
export const MAX_REPORT_RANKS = 100_000;
export const MAX_REPORT_STRINGS = 64;
export const MAX_FIELD_LENGTH = 1_024;

// eslint-disable-next-line no-control-regex -- control characters are exactly what this pattern rejects
const CONTROL = /[\u0000-\u001f\u007f]/;
const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;

/** A Recover/Fault jobId we are willing to look up: non-empty, short, no control characters. */
export const validJobId = (jobId: string): boolean =>
  jobId.length > 0 && jobId.length <= MAX_ID_LENGTH && !CONTROL.test(jobId);

export const validRole = (role: string): boolean => role.length <= MAX_ROLE_LENGTH && !CONTROL.test(role);

/** GetFaultMsgSignal: '-1' (cluster-wide), or 8-128 characters without CJK (docs/grpc.md#fault-service). */
export const validFaultQueryJobId = (jobId: string): boolean =>
  jobId === '-1' || (jobId.length >= 8 && jobId.length <= MAX_ID_LENGTH && !CJK.test(jobId) && !CONTROL.test(jobId));

/** Shorten an untrusted string before it goes into a log line or a reply. */
export const clip = (s: string, max = 64): string => (s.length <= max ? s : `${s.slice(0, max)}…(${s.length})`);

/** Size checks on a Recover report: list lengths and string lengths. */
export function checkReportSizes(parts: {
  faultRanks?: readonly FaultRank[];
  strings?: readonly string[];
  lists?: ReadonlyArray<readonly string[]>;
}): Parsed<true> {
  const ranks = parts.faultRanks ?? [];
  if (ranks.length > MAX_REPORT_RANKS) return rejected(`too many faultRanks: ${ranks.length}`);
  for (const r of ranks) {
    if (r.rankId.length > MAX_ID_LENGTH || r.faultType.length > MAX_ID_LENGTH) return rejected('faultRank field too long');
  }
  for (const s of parts.strings ?? []) if (s.length > MAX_FIELD_LENGTH) return rejected('field too long');
  for (const l of parts.lists ?? []) {
    if (l.length > MAX_REPORT_RANKS) return rejected(`list too long: ${l.length}`);
    for (const s of l) if (s.length > MAX_FIELD_LENGTH) return rejected('list entry too long');
  }
  return ok(true);
}

// ---- public faults (docs/rules.md#ingest.public-faults, docs/formats.md#public-fault) ----

export const DEFAULT_PUBLIC_FAULT_RESOURCES = ['CCAE', 'fd-online', 'pingmesh', 'Netmind', 'dpcStorage', 'dtfsStorage'] as const;
const PUB_ID = /^[A-Za-z0-9._-]{8,128}$/;
const PUB_CODE = /^[0-9]{9}$/;
/** 2025-01-01T00:00:00Z in ms; 13-digit ms timestamps only. */
const MIN_PUB_TIME_MS = 1_735_689_600_000;
const MAX_PUB_TIME_MS = 9_999_999_999_999;
const PUB_TYPES = new Set(['NPU', 'Node', 'Network', 'Storage']);
const PUB_ASSERTIONS = new Set(['occur', 'recover', 'once']);
export const MAX_PUBLIC_FAULTS = 100;
export const MAX_PUBLIC_INFLUENCES = 1_000;
export const MAX_PUBLIC_DEVICE_ID = 31;

const validPubTime = (t: number): boolean => Number.isInteger(t) && t >= MIN_PUB_TIME_MS && t <= MAX_PUB_TIME_MS;

export const resourceAllowed = (resource: string, allowed: readonly string[]): boolean => allowed.includes(resource);

/** Structural rules of a public-fault request (the fault-code-in-config check is the handler's). */
export function checkPublicFaultRequest(req: PublicFaultRequest): Parsed<PublicFaultRequest> {
  if (!PUB_ID.test(req.id)) return rejected('id is invalid');
  if (!validPubTime(req.timestamp)) return rejected('timestamp is invalid');
  if (req.version !== '1.0') return rejected('version is invalid');
  if (req.faults.length === 0 || req.faults.length > MAX_PUBLIC_FAULTS) return rejected('faults number is invalid');
  for (const [i, f] of req.faults.entries()) {
    const at = `faults[${i}]`;
    if (!PUB_ID.test(f.faultId)) return rejected(`${at}.faultId is invalid`);
    if (!PUB_TYPES.has(f.faultType)) return rejected(`${at}.faultType is invalid`);
    if (!PUB_CODE.test(f.faultCode)) return rejected(`${at}.faultCode is invalid`);
    if (!validPubTime(f.faultTime)) return rejected(`${at}.faultTime is invalid`);
    if (!PUB_ASSERTIONS.has(f.assertion)) return rejected(`${at}.assertion is invalid`);
    if (f.influence.length === 0 || f.influence.length > MAX_PUBLIC_INFLUENCES) return rejected(`${at}.influence number is invalid`);
    for (const [j, inf] of f.influence.entries()) {
      const where = `${at}.influence[${j}]`;
      if (inf.nodeName === '' && inf.nodeSN === '') return rejected(`${where} needs nodeName or nodeSN`);
      if (inf.nodeName.length > 253 || inf.nodeSN.length > MAX_ID_LENGTH) return rejected(`${where} node is invalid`);
      const ids = new Set<number>();
      for (const d of inf.deviceIds) {
        if (!Number.isInteger(d) || d < 0 || d > MAX_PUBLIC_DEVICE_ID || ids.has(d)) return rejected(`${where}.deviceIds is invalid`);
        ids.add(d);
      }
    }
  }
  return ok(req);
}
