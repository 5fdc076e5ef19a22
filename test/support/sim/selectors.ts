/**
 * Label and field selectors as the apiserver reads them (Kubernetes docs, "Labels and Selectors"
 * and "Field Selectors"): comma-separated requirements, all of which must hold.
 */
import type { ResourceType } from './resources.ts';

type Obj = { readonly metadata?: { readonly labels?: Readonly<Record<string, string>> }; readonly [k: string]: unknown };
export type Matcher = (obj: Obj) => boolean;

/** A selector the apiserver would refuse (400 BadRequest). */
export class SelectorError extends Error {}

/** Splits on commas outside parentheses (`a in (x,y),b`). */
function requirements(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) { out.push(cur); cur = ''; } else cur += ch;
  }
  out.push(cur);
  return out.map((r) => r.trim()).filter((r) => r !== '');
}

const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function key(k: string, sel: string): string {
  if (!LABEL_KEY.test(k)) throw new SelectorError(`unable to parse requirement: invalid label key "${k}" in "${sel}"`);
  return k;
}

function value(v: string, sel: string): string {
  if (!LABEL_VALUE.test(v) || v.length > 63) throw new SelectorError(`unable to parse requirement: invalid label value "${v}" in "${sel}"`);
  return v;
}

/** `=`, `==`, `!=`, `in`, `notin`, existence (`k`) and absence (`!k`). */
export function labelMatcher(selector: string | undefined): Matcher {
  if (selector === undefined || selector.trim() === '') return () => true;
  const checks = requirements(selector).map((r): ((l: Readonly<Record<string, string>>) => boolean) => {
    let m = /^(\S+?)\s+(in|notin)\s+\((.*)\)$/.exec(r);
    if (m !== null) {
      const k = key(m[1]!, selector);
      const vs = new Set(m[3]!.split(',').map((v) => value(v.trim(), selector)));
      return m[2] === 'in' ? (l) => l[k] !== undefined && vs.has(l[k]) : (l) => l[k] === undefined || !vs.has(l[k]);
    }
    m = /^([^!=\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(r);
    if (m !== null) {
      const k = key(m[1]!, selector);
      const v = value(m[3]!, selector);
      return m[2] === '!=' ? (l) => l[k] !== v : (l) => l[k] === v;
    }
    m = /^(!?)\s*(\S+)$/.exec(r);
    if (m !== null) {
      const k = key(m[2]!, selector);
      return m[1] === '!' ? (l) => l[k] === undefined : (l) => l[k] !== undefined;
    }
    throw new SelectorError(`unable to parse requirement: "${r}"`);
  });
  return (obj) => { const l = obj.metadata?.labels ?? {}; return checks.every((c) => c(l)); };
}

/** The value of a dotted field (an absent one reads as the empty string, a bool as "true"/"false"). */
function fieldValue(obj: Obj, path: string): string {
  let cur: unknown = obj;
  for (const p of path.split('.')) cur = typeof cur === 'object' && cur !== null ? (cur as Record<string, unknown>)[p] : undefined;
  if (cur === undefined || cur === null) return path === 'spec.unschedulable' ? 'false' : '';
  return String(cur);
}

/** `=`, `==`, `!=` on metadata.name, metadata.namespace and the fields the kind supports; others are refused. */
export function fieldMatcher(selector: string | undefined, type: ResourceType): Matcher {
  if (selector === undefined || selector.trim() === '') return () => true;
  const checks = requirements(selector).map((r): Matcher => {
    const m = /^([^!=\s]+)\s*(==|=|!=)\s*(.*)$/.exec(r);
    if (m === null) throw new SelectorError(`invalid selector: '${selector}'; can't understand '${r}'`);
    const f = m[1]!;
    if (f !== 'metadata.name' && f !== 'metadata.namespace' && !type.fields.includes(f)) {
      throw new SelectorError(`field label not supported: ${f}`);
    }
    const v = m[3]!.trim();
    return m[2] === '!=' ? (o) => fieldValue(o, f) !== v : (o) => fieldValue(o, f) === v;
  });
  return (obj) => checks.every((c) => c(obj));
}
