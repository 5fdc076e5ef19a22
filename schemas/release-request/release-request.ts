/**
 * `<cluster-system>/clusterd-ts-release-requests`: the operator's requests to release manually
 * separated NPUs, written by `kubectl clusterd release` (cli/) with the user's own RBAC and read by
 * the controller (controllers/fault-policy.controller.ts), which releases its own escalation upgrades
 * (FaultFrequency -> ManuallySeparateNPU) and ClusterD-style manual separations of those NPUs and
 * resets their counters, so the persisted state no longer re-asserts them.
 *
 * A request releases what was separated at or before its time (`at`): replayed after a restart it
 * changes nothing, and a chip that faults again later and is separated anew stays separated. The list
 * is the record of who released what and when; it keeps the newest RELEASE_REQUESTS_MAX entries.
 */
import { ok, parseJson, rejected, type Parsed } from '../parsed.ts';

export const RELEASE_REQUESTS_CM_NAME = 'clusterd-ts-release-requests';
export const RELEASE_REQUESTS_KEY = 'requests';
export const RELEASE_REQUESTS_MAX = 200;
const MAX_CHARS = 256 * 1024;

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

/** The requests of the ConfigMap's data; malformed entries are reported and skipped, never thrown. */
export function parseReleaseRequests(data: Readonly<Record<string, string>> | undefined): Parsed<{ readonly requests: readonly ParsedReleaseRequest[]; readonly skipped: readonly string[] }> {
  const text = data?.[RELEASE_REQUESTS_KEY];
  if (text === undefined) return ok({ requests: [], skipped: [] });
  const p = parseJson(RELEASE_REQUESTS_CM_NAME, text, { maxChars: MAX_CHARS });
  if (!p.ok) return p;
  if (!Array.isArray(p.value)) return rejected(`${RELEASE_REQUESTS_KEY} is not a JSON array`, 'schema');
  const requests: ParsedReleaseRequest[] = [];
  const skipped: string[] = [];
  p.value.forEach((r: unknown, i: number) => {
    const o = r as Partial<Record<keyof ReleaseRequest, unknown>> | null;
    const atMs = typeof o?.at === 'string' ? Date.parse(o.at) : NaN;
    if (o === null || typeof o !== 'object' || !isStr(o.node) || !Array.isArray(o.npus) || !o.npus.every(isStr) || !isStr(o.by) || Number.isNaN(atMs)) {
      skipped.push(`entry ${i}: wants {node, npus: [..], by, at: RFC 3339}`);
      return;
    }
    requests.push({ node: o.node, npus: o.npus as string[], by: o.by, at: o.at as string, atMs });
  });
  return ok({ requests, skipped });
}

/** The data value with one more request, the oldest dropped past the bound. */
export function appendReleaseRequest(existing: readonly ReleaseRequest[], r: ReleaseRequest): string {
  const all = [...existing.map(({ node, npus, by, at }) => ({ node, npus, by, at })), { node: r.node, npus: r.npus, by: r.by, at: r.at }];
  return JSON.stringify(all.slice(-RELEASE_REQUESTS_MAX), null, 1);
}
