/**
 * `<cluster-system>/clusterd-ts-release-requests`: the operator's requests to release manually
 * separated NPUs, written by `kubectl clusterd release` (cli/) with the user's own RBAC and read by
 * the controller (controllers/fault-policy.controller.ts), which releases its own escalation upgrades
 * (FaultFrequency -> ManuallySeparateNPU) and ClusterD-style manual separations of those NPUs and
 * resets their counters, so the persisted state no longer re-asserts them.
 *
 * A request releases what was separated at or before its time (`at`): replayed after a restart it
 * changes nothing, and a chip that faults again later and is separated anew stays separated.
 *
 * The list is also the record of who released what and when, so it is only ever appended to: the
 * newest RELEASE_REQUESTS_MAX entries within RELEASE_REQUESTS_MAX_CHARS are kept, entries kept
 * verbatim (also ones the controller skips), and the oldest that no longer fit are dropped and
 * counted in the `droppedOldest` key. Each entry is bounded (a node name is a DNS-1123 subdomain, at
 * most RELEASE_REQUEST_MAX_NPUS NPU names, `by` at most RELEASE_REQUEST_MAX_BY_CHARS): an entry
 * past a bound is skipped and reported, the others are acted on.
 */
import { ok, parseJson, rejected, type Parsed } from '../parsed.ts';

export const RELEASE_REQUESTS_CM_NAME = 'clusterd-ts-release-requests';
export const RELEASE_REQUESTS_KEY = 'requests';
/** Data key: how many of the oldest entries were dropped from the list so far (decimal). */
export const RELEASE_REQUESTS_DROPPED_KEY = 'droppedOldest';
export const RELEASE_REQUESTS_MAX = 200;
/** The list's text stays within this (a ConfigMap holds 1 MiB). */
export const RELEASE_REQUESTS_MAX_CHARS = 512 * 1024;
/** NPUs of one request (a node has at most 16). */
export const RELEASE_REQUEST_MAX_NPUS = 64;
export const RELEASE_REQUEST_MAX_BY_CHARS = 256;
/** Anything a ConfigMap can hold is read; the entries are checked one by one. */
const MAX_CHARS = 1024 * 1024;

/** A Kubernetes node name: a DNS-1123 subdomain. */
export const NODE_NAME = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** An NPU name as the device plugin writes it (`Ascend910-3`, `npu-0`). */
export const NPU_NAME = /^(?=.{1,64}$)[A-Za-z][A-Za-z0-9]*-\d{1,5}$/;

export interface ReleaseRequest {
  readonly node: string;
  readonly npus: readonly string[];
  /** The Kubernetes user who asked (SelfSubjectReview). */
  readonly by: string;
  /** RFC 3339. */
  readonly at: string;
}

export interface ParsedReleaseRequest extends ReleaseRequest {
  readonly atMs: number;
}

const isStr = (v: unknown): v is string => typeof v === 'string' && v !== '';

/** Why an entry is not acted on; undefined when it is a valid, bounded request. */
function entryProblem(r: unknown): string | undefined {
  const o = r as Partial<Record<keyof ReleaseRequest, unknown>> | null;
  if (o === null || typeof o !== 'object' || !isStr(o.node) || !Array.isArray(o.npus) || !o.npus.every(isStr) || !isStr(o.by) || typeof o.at !== 'string' || Number.isNaN(Date.parse(o.at))) {
    return 'wants {node, npus: [..], by, at: RFC 3339}';
  }
  if (!NODE_NAME.test(o.node)) return `node ${JSON.stringify(o.node.slice(0, 64))} is not a DNS-1123 subdomain`;
  if (o.npus.length > RELEASE_REQUEST_MAX_NPUS) return `${o.npus.length} NPUs > ${RELEASE_REQUEST_MAX_NPUS}`;
  const bad = (o.npus as string[]).find((n) => !NPU_NAME.test(n));
  if (bad !== undefined) return `${JSON.stringify(bad.slice(0, 64))} is not an NPU name`;
  if (o.by.length > RELEASE_REQUEST_MAX_BY_CHARS) return `by: ${o.by.length} chars > ${RELEASE_REQUEST_MAX_BY_CHARS}`;
  return undefined;
}

/** The requests of the ConfigMap's data; entries malformed or past a bound are reported and skipped, never thrown. */
export function parseReleaseRequests(data: Readonly<Record<string, string>> | undefined): Parsed<{ readonly requests: readonly ParsedReleaseRequest[]; readonly skipped: readonly string[] }> {
  const raw = rawReleaseRequests(data);
  if (!raw.ok) return raw;
  const requests: ParsedReleaseRequest[] = [];
  const skipped: string[] = [];
  raw.value.forEach((r: unknown, i: number) => {
    const problem = entryProblem(r);
    if (problem !== undefined) { skipped.push(`entry ${i}: ${problem}`); return; }
    const o = r as ReleaseRequest;
    requests.push({ node: o.node, npus: o.npus, by: o.by, at: o.at, atMs: Date.parse(o.at) });
  });
  return ok({ requests, skipped });
}

/** The list as stored, every entry verbatim (what an append keeps). */
export function rawReleaseRequests(data: Readonly<Record<string, string>> | undefined): Parsed<readonly unknown[]> {
  const text = data?.[RELEASE_REQUESTS_KEY];
  if (text === undefined) return ok([]);
  const p = parseJson(RELEASE_REQUESTS_CM_NAME, text, { maxChars: MAX_CHARS });
  if (!p.ok) return p;
  if (!Array.isArray(p.value)) return rejected(`${RELEASE_REQUESTS_KEY} is not a JSON array`, 'schema');
  return ok(p.value);
}

/** The problem of a request the CLI is about to append (the controller would skip it); undefined when fine. */
export const releaseRequestProblem = (r: ReleaseRequest): string | undefined => entryProblem(r);

/**
 * The data with one more request: the stored entries kept verbatim, the oldest dropped past
 * RELEASE_REQUESTS_MAX entries or RELEASE_REQUESTS_MAX_CHARS and added to `droppedOldest`.
 */
export function appendReleaseRequest(data: Readonly<Record<string, string>> | undefined, existing: readonly unknown[], r: ReleaseRequest): { data: Record<string, string>; dropped: number } {
  const all = [...existing, { node: r.node, npus: r.npus, by: r.by, at: r.at }];
  const texts = all.map((e) => JSON.stringify(e));
  let from = Math.max(0, all.length - RELEASE_REQUESTS_MAX);
  let chars = texts.slice(from).reduce((n, t) => n + t.length + 2, 2);
  while (chars > RELEASE_REQUESTS_MAX_CHARS && from < all.length - 1) chars -= texts[from++]!.length + 2;
  const before = Number(data?.[RELEASE_REQUESTS_DROPPED_KEY] ?? '0');
  const dropped = (Number.isSafeInteger(before) && before > 0 ? before : 0) + from;
  const out: Record<string, string> = { [RELEASE_REQUESTS_KEY]: `[\n${texts.slice(from).map((t) => ` ${t}`).join(',\n')}\n]` };
  if (dropped > 0) out[RELEASE_REQUESTS_DROPPED_KEY] = String(dropped);
  return { data: out, dropped: from };
}
