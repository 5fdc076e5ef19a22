/**
 * Durable "last good state" of device-info (bad input must not erase a node's faults). When a node's device-info turns
 * invalid, the controller keeps the faults of its last accepted version; so that a restart or a
 * failover keeps them too, the leader persists that version's raw ConfigMap data, for held nodes
 * only, in `mindx-dl/clusterd-ts-device-info-last-good` (key: the device-info CM name, value: Go
 * JSON of the CM's data). At start, a node whose device-info is still invalid is restored from it
 * through the same parser and CheckCode check as a live update.
 *
 * Why not read back cluster-info-device-*: what we wrote there is the view after policy
 * (escalated levels, public faults, manual separation merged in, filtered faults withheld); fed back
 * as the device plugin's input it would apply policy twice and pin public faults and escalations
 * that have since cleared. ClusterD itself keeps nothing: after its restart an invalid device-info
 * is not parsed and the node is missing from cluster-info-device until a valid update.
 *
 * A deleted device-info is not held: ClusterD removes the node's device entry on delete
 * (informer DeleteFunc -> DeviceInfoCollector, isAdd=false), and so do we.
 *
 * A damaged persisted entry (not a JSON object of strings, or data that no longer parses or passes
 * its CheckCode) of a node whose device-info is still invalid is kept verbatim (`keepDamaged`): it
 * is written back as it was, never replaced by less, until the node's device-info is accepted or
 * deleted. What the node's faults are meanwhile is the intake's choice
 * (controllers/device-faults.controller.ts restoreLastGood).
 */
import { goJson, goMap } from '../schemas/go-json.ts';
import type { BoundHits } from './bound-hits.ts';
import type { ConfigMap } from '../runtime/kube-objects.ts';

/** The `bound` label of telemetry/bounds.ts BOUNDS.lastGoodBytes. */
const BOUND = 'last_good_bytes';

export const LAST_GOOD_CM_NAME = 'clusterd-ts-device-info-last-good';
/** Room for the raw device-info of held nodes; sorted by CM name, those past it are not persisted. */
export const LAST_GOOD_MAX_BYTES = 900 * 1024;

export interface LastGood {
  readonly cmName: string;
  readonly data: Readonly<Record<string, string>>;
}

export class DeviceInfoLastGood {
  /** node -> the raw data of its last accepted device-info (shared with the informer's copy while current). */
  private readonly accepted = new Map<string, LastGood>();
  /** Nodes whose current device-info is rejected while their last good state is kept. */
  private readonly held = new Set<string>();
  /** node -> its damaged persisted entry, written back verbatim while the node is held. */
  private readonly damaged = new Map<string, { readonly cmName: string; readonly text: string }>();
  private readonly maxBytes: number;
  private readonly bounds: BoundHits<typeof BOUND> | undefined;

  constructor(opts: { maxBytes?: number; bounds?: BoundHits<typeof BOUND> } = {}) {
    this.maxBytes = opts.maxBytes ?? LAST_GOOD_MAX_BYTES;
    this.bounds = opts.bounds;
  }

  /** The node's device-info was accepted. Returns true when the held set changed. */
  accept(node: string, cmName: string, data: Readonly<Record<string, string>>): boolean {
    this.accepted.set(node, { cmName, data });
    this.damaged.delete(node);
    return this.held.delete(node);
  }

  /** The node's device-info was rejected: hold its last good state if it has one. Returns true when the held set changed. */
  reject(node: string): boolean {
    if ((!this.accepted.has(node) && !this.damaged.has(node)) || this.held.has(node)) return false;
    this.held.add(node);
    return true;
  }

  /** The device-info was deleted: nothing is kept. Returns true when the held set changed. */
  remove(node: string): boolean {
    this.accepted.delete(node);
    this.damaged.delete(node);
    return this.held.delete(node);
  }

  /**
   * The node's persisted entry is damaged and its device-info still invalid: the node is held and
   * the entry's text is written back verbatim (not dropped, not replaced by less).
   */
  keepDamaged(node: string, cmName: string, text: string): void {
    this.accepted.delete(node);
    this.damaged.set(node, { cmName, text });
    this.held.add(node);
  }

  isHeld(node: string): boolean { return this.held.has(node); }
  get heldCount(): number { return this.held.size; }

  /** The state ConfigMap's data: the held nodes' raw device-info, within the byte bound. */
  desired(): Record<string, string> {
    const entries = [...this.held].flatMap((n) => {
      const d = this.damaged.get(n);
      if (d !== undefined) return [{ cmName: d.cmName, text: d.text }];
      const a = this.accepted.get(n);
      return a === undefined ? [] : [{ cmName: a.cmName, text: goJson(goMap({ ...a.data })) }];
    }).sort((a, b) => (a.cmName < b.cmName ? -1 : a.cmName > b.cmName ? 1 : 0));
    const out: Record<string, string> = {};
    let bytes = 0;
    const left: string[] = [];
    for (const e of entries) {
      const text = e.text;
      const size = Buffer.byteLength(text, 'utf8') + e.cmName.length;
      if (bytes + size > this.maxBytes) { left.push(e.cmName); continue; }
      bytes += size;
      out[e.cmName] = text;
    }
    if (left.length > 0) {
      this.bounds?.hit(BOUND, 'last good device-info state over its size bound; these nodes would lose it on a restart', { maxBytes: this.maxBytes, notPersisted: left.length, first: left.slice(0, 5) }, left.length);
    }
    return out;
  }
}

export interface PersistedLastGood {
  /** CM name -> raw device-info data. */
  readonly good: Map<string, Record<string, string>>;
  /** CM name -> the entry's text and why it is not a JSON object of strings. */
  readonly damaged: Map<string, { readonly text: string; readonly reason: string }>;
}

/** The persisted entries, the readable ones and the damaged ones (never thrown away here). */
export function readLastGood(cm: ConfigMap | undefined): PersistedLastGood {
  const good = new Map<string, Record<string, string>>();
  const damaged = new Map<string, { text: string; reason: string }>();
  for (const [name, text] of Object.entries(cm?.data ?? {})) {
    try {
      const v: unknown = JSON.parse(text);
      if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string')) good.set(name, v as Record<string, string>);
      else damaged.set(name, { text, reason: 'not a JSON object of strings' });
    } catch (e) {
      damaged.set(name, { text, reason: `malformed JSON: ${(e as Error).message.slice(0, 120)}` });
    }
  }
  return { good, damaged };
}

/** The readable persisted entries (CM name -> raw data). */
export const parseLastGood = (cm: ConfigMap | undefined): Map<string, Record<string, string>> => readLastGood(cm).good;
