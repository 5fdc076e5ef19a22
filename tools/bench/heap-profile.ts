/**
 * Where a heap snapshot's memory goes: `node tools/bench/heap-profile.ts <file.heapsnapshot> [--top N] [--holders NAME] [--min-pct P]`.
 * Streams the snapshot (a 16,000-node snapshot is larger than V8's longest string, so no JSON.parse
 * of the whole file), builds the dominator tree (Cooper, Harvey & Kennedy's iterative algorithm; weak
 * edges do not retain) and prints:
 *  - self size by constructor / node type (what kinds of objects fill the heap);
 *  - the retained size of each property of the global object NAME (default `__scaleHolders`, which
 *    tools/bench/scale-worker.ts sets when SCALE_HEAP_SNAPSHOT is given), with the kinds inside each;
 *    memory reachable from two holders is retained by neither and shows up as "shared";
 *  - the N largest retainers in the dominator tree with the edge that reaches them.
 * A profiling tool, not part of the controller.
 */
import { openSync, readSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface Meta { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] }

/** Growable typed array of numbers (node and edge fields are small integers; sizes fit in 2^53). */
class Nums {
  a = new Float64Array(1 << 20);
  n = 0;
  push(v: number): void {
    if (this.n === this.a.length) { const b = new Float64Array(this.a.length * 2); b.set(this.a); this.a = b; }
    this.a[this.n++] = v;
  }
}

/** Reads the snapshot file in chunks and hands out bytes. */
class Reader {
  private readonly fd: number;
  private buf = Buffer.alloc(64 << 20);
  private len = 0;
  private pos = 0;
  constructor(path: string) { this.fd = openSync(path, 'r'); }
  byte(): number {
    if (this.pos === this.len) {
      this.len = readSync(this.fd, this.buf, 0, this.buf.length, null);
      this.pos = 0;
      if (this.len === 0) return -1;
    }
    return this.buf[this.pos++]!;
  }
  /** Skips to just after `marker` (ASCII). */
  seek(marker: string): void {
    let i = 0;
    for (;;) {
      const c = this.byte();
      if (c < 0) throw new Error(`marker ${marker} not found`);
      i = c === marker.charCodeAt(i) ? i + 1 : (c === marker.charCodeAt(0) ? 1 : 0);
      if (i === marker.length) return;
    }
  }
  /** The JSON text of a balanced {...} value starting at the next '{'. */
  object(): string {
    const out: number[] = [];
    let depth = 0;
    let inStr = false;
    let esc = false;
    for (;;) {
      const c = this.byte();
      if (c < 0) throw new Error('unexpected end');
      if (depth === 0 && c !== 0x7b) continue;
      out.push(c);
      if (inStr) { if (esc) esc = false; else if (c === 0x5c) esc = true; else if (c === 0x22) inStr = false; continue; }
      if (c === 0x22) inStr = true;
      else if (c === 0x7b) depth++;
      else if (c === 0x7d && --depth === 0) return Buffer.from(out).toString('utf8');
    }
  }
  /** An array of non-negative integers, after its '['. */
  numbers(into: Nums): void {
    let v = -1;
    for (;;) {
      const c = this.byte();
      if (c >= 0x30 && c <= 0x39) v = (v < 0 ? 0 : v * 10) + (c - 0x30);
      else { if (v >= 0) { into.push(v); v = -1; } if (c === 0x5d || c < 0) return; }
    }
  }
  /** An array of strings, after its '['; each kept to its first `max` characters. */
  strings(max: number): string[] {
    const out: string[] = [];
    for (;;) {
      let c = this.byte();
      while (c !== 0x22 && c !== 0x5d && c >= 0) c = this.byte();
      if (c !== 0x22) return out;
      const bytes: number[] = [];
      let esc = false;
      for (;;) {
        c = this.byte();
        if (esc) { esc = false; if (bytes.length < max * 2) bytes.push(0x5c, c); continue; }
        if (c === 0x5c) { esc = true; continue; }
        if (c === 0x22 || c < 0) break;
        if (bytes.length < max * 2) bytes.push(c);
      }
      let s: string;
      try { s = JSON.parse(`"${Buffer.from(bytes).toString('utf8')}"`) as string; } catch { s = Buffer.from(bytes).toString('latin1'); }
      out.push(s.length > max ? s.slice(0, max) : s);
    }
  }
}

const MiB = (b: number): string => (b / 2 ** 20).toFixed(1);

export interface ProfileOptions {
  readonly top?: number;
  /** The global property whose own properties are the holders to report. */
  readonly holders?: string;
  /** Largest retainers down to this % of the heap. */
  readonly minPct?: number;
  readonly print?: (line: string) => void;
}

/** Prints the profile; returns each holder's retained size in bytes (empty when there is no holders object). */
export function heapProfile(file: string, o: ProfileOptions = {}): Map<string, number> {
  const print = o.print ?? ((l: string) => console.log(l));
  const values = { top: o.top ?? 25, holders: o.holders ?? '__scaleHolders', minPct: o.minPct ?? 1 };
  const retainedByHolder = new Map<string, number>();
  const r = new Reader(file);
  r.seek('"snapshot"');
  const snap = JSON.parse(r.object()) as { meta: Meta; node_count: number; edge_count: number };
  const meta = snap.meta;
  const nodes = new Nums();
  const edges = new Nums();
  r.seek('"nodes":['); r.numbers(nodes);
  r.seek('"edges":['); r.numbers(edges);
  r.seek('"strings":[');
  const strings = r.strings(80);

  const NF = meta.node_fields.length;
  const EF = meta.edge_fields.length;
  const nType = meta.node_fields.indexOf('type');
  const nName = meta.node_fields.indexOf('name');
  const nSelf = meta.node_fields.indexOf('self_size');
  const nEdges = meta.node_fields.indexOf('edge_count');
  const eType = meta.edge_fields.indexOf('type');
  const eName = meta.edge_fields.indexOf('name_or_index');
  const eTo = meta.edge_fields.indexOf('to_node');
  const nodeTypes = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const WEAK = edgeTypes.indexOf('weak');
  const SHORTCUT = edgeTypes.indexOf('shortcut');
  const N = nodes.n / NF;
  const E = edges.n / EF;
  const na = nodes.a;
  const ea = edges.a;
  const firstEdge = new Uint32Array(N + 1);
  for (let i = 0, e = 0; i < N; i++) { firstEdge[i] = e; e += na[i * NF + nEdges]!; firstEdge[i + 1] = e; }
  const strongEdge = (e: number): boolean => { const t = ea[e * EF + eType]!; return t !== WEAK && t !== SHORTCUT; };
  const target = (e: number): number => ea[e * EF + eTo]! / NF;

  // Postorder from the root (node 0) over strong edges, iteratively.
  const post = new Int32Array(N).fill(-1);
  const order = new Int32Array(N);
  let count = 0;
  {
    const stack = new Int32Array(N);
    const next = new Uint32Array(N);
    const seen = new Uint8Array(N);
    let sp = 0;
    stack[sp++] = 0; seen[0] = 1; next[0] = firstEdge[0]!;
    while (sp > 0) {
      const v = stack[sp - 1]!;
      if (next[v]! < firstEdge[v + 1]!) {
        const e = next[v]!++;
        if (!strongEdge(e)) continue;
        const w = target(e);
        if (seen[w] === 0) { seen[w] = 1; next[w] = firstEdge[w]!; stack[sp++] = w; }
      } else { sp--; post[v] = count; order[count++] = v; }
    }
  }
  // Predecessors (strong edges between reachable nodes), CSR.
  const predCount = new Uint32Array(N + 1);
  for (let v = 0; v < N; v++) if (post[v]! >= 0) for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e++) if (strongEdge(e)) { const w = target(e); if (post[w]! >= 0) predCount[w + 1]!++; }
  for (let i = 0; i < N; i++) predCount[i + 1]! += predCount[i]!;
  const preds = new Int32Array(predCount[N]!);
  const fill = predCount.slice(0, N);
  for (let v = 0; v < N; v++) if (post[v]! >= 0) for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e++) if (strongEdge(e)) { const w = target(e); if (post[w]! >= 0) preds[fill[w]!++] = v; }
  // Dominators on postorder numbers.
  const idom = new Int32Array(count).fill(-1);
  const rootPo = post[0]!;
  idom[rootPo] = rootPo;
  for (let changed = true; changed;) {
    changed = false;
    for (let i = count - 1; i >= 0; i--) {
      if (i === rootPo) continue;
      const v = order[i]!;
      let nd = -1;
      for (let k = predCount[v]!; k < predCount[v + 1]!; k++) {
        let p = post[preds[k]!]!;
        if (idom[p] === -1) continue;
        if (nd === -1) { nd = p; continue; }
        let q = nd;
        while (p !== q) { while (p < q) p = idom[p]!; while (q < p) q = idom[q]!; }
        nd = p;
      }
      if (nd !== -1 && idom[i] !== nd) { idom[i] = nd; changed = true; }
    }
  }
  // Retained sizes: children before parents in postorder.
  const retained = new Float64Array(count);
  for (let i = 0; i < count; i++) retained[i]! += na[order[i]! * NF + nSelf]!;
  for (let i = 0; i < count; i++) if (i !== rootPo) retained[idom[i]!]! += retained[i]!;

  const kind = (v: number): string => {
    const t = nodeTypes[na[v * NF + nType]!]!;
    const name = strings[na[v * NF + nName]!] ?? '';
    if (t === 'string' && na[v * NF + nSelf]! > 2 ** 16) return `(string "${name.slice(0, 40)}")`;
    if (t === 'object' || t === 'native' || t === 'closure') return t === 'closure' ? '(closure)' : name.split(' ')[0]!;
    return `(${t})`;
  };
  const bySelf = new Map<string, [number, number]>();
  let total = 0;
  for (let i = 0; i < count; i++) {
    const v = order[i]!;
    const s = na[v * NF + nSelf]!;
    total += s;
    const k = kind(v);
    const a = bySelf.get(k) ?? [0, 0];
    a[0] += s; a[1]++;
    bySelf.set(k, a);
  }
  // Coarse categories: compiled code and V8 metadata, program text (a module's source or source map:
  // a long string that is not JSON data), and the rest (objects, data strings).
  const cat = new Map<string, number>();
  for (let i = 0; i < count; i++) {
    const v = order[i]!;
    const t = nodeTypes[na[v * NF + nType]!]!;
    const sz = na[v * NF + nSelf]!;
    const text = strings[na[v * NF + nName]!] ?? '';
    const c = t === 'code' || t === 'object shape' || t === 'closure' ? 'code, closures, object shapes'
      : t === 'string' && sz > 8192 && !/^[{"[]/.test(text) ? 'program text (module sources, source maps)'
        : t === 'string' || t === 'concatenated string' || t === 'sliced string' ? 'other strings (data, names)' : 'objects, arrays, V8 internals';
    cat.set(c, (cat.get(c) ?? 0) + sz);
  }
  const top = values.top;
  print(`nodes ${N}, edges ${E}, reachable ${count}, reachable self size ${MiB(total)} MiB`);
  print('\n## self size by category');
  for (const [k, sz] of [...cat].sort((a, b) => b[1] - a[1])) print(`${MiB(sz).padStart(8)} MiB  ${k}`);
  print('\n## self size by kind');
  for (const [k, [s, c]] of [...bySelf].sort((a, b) => b[1][0] - a[1][0]).slice(0, top)) print(`${MiB(s).padStart(8)} MiB  ${String(c).padStart(9)}  ${k}`);

  // Kinds inside one dominator subtree.
  const childrenOf = (): Int32Array[] => {
    const kids: number[][] = Array.from({ length: count }, () => []);
    for (let i = 0; i < count; i++) if (i !== rootPo) kids[idom[i]!]!.push(i);
    return kids.map((k) => Int32Array.from(k));
  };
  let kids: Int32Array[] | undefined;
  /** Self size inside one dominator subtree (post-order index po), summed by keyOf(post-order index,
   *  node index) and sorted largest first. */
  const sumSubtree = (po: number, keyOf: (i: number, v: number) => string): [string, number][] => {
    kids ??= childrenOf();
    const m = new Map<string, number>();
    const stack = [po];
    while (stack.length > 0) {
      const i = stack.pop()!;
      const v = order[i]!;
      const k = keyOf(i, v);
      m.set(k, (m.get(k) ?? 0) + na[v * NF + nSelf]!);
      for (const c of kids[i]!) stack.push(c);
    }
    return [...m].sort((a, b) => b[1] - a[1]);
  };
  const inside = (po: number): [string, number][] => sumSubtree(po, (_i, v) => kind(v));
  const edgeName = (e: number): string => {
    const t = edgeTypes[ea[e * EF + eType]!]!;
    const n = ea[e * EF + eName]!;
    return t === 'element' || t === 'hidden' ? `[${n}]` : (strings[n] ?? String(n));
  };

  // The edge from each object's dominator to it (its "field"), where there is one.
  const via = new Int32Array(count).fill(-1);
  for (let i = 0; i < count; i++) {
    if (i === rootPo) continue;
    const d = order[idom[i]!]!;
    for (let e = firstEdge[d]!; e < firstEdge[d + 1]!; e++) if (target(e) === order[i]) { via[i] = e; break; }
  }
  /** Self size inside one dominator subtree by the field that holds each object (map keys and
   *  array indexes folded), so "records" or "data" says which part of a store holds the bytes. */
  const fields = (po: number): [string, number][] => sumSubtree(po, (i, v) => {
    const f = via[i]! >= 0 ? edgeName(via[i]!) : '?';
    return `${/^\[\d+\]$/.test(f) || /^node-\d+|-node-\d+/.test(f) ? '[i]' : f}:${kind(v).replace(/^\(string ".*/s, '(string)')}`;
  });

  // The holders object: a property of some global object with that name.
  let holders = -1;
  for (let v = 0; v < N && holders < 0; v++) for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e++) if (edgeName(e) === values.holders && nodeTypes[ea[e * EF + eType]!] !== 'weak') { holders = target(e); break; }
  if (holders >= 0) {
    print(`\n## retained by each property of ${values.holders}`);
    let sum = 0;
    for (let e = firstEdge[holders]!; e < firstEdge[holders + 1]!; e++) {
      if (edgeTypes[ea[e * EF + eType]!] !== 'property') continue;
      const w = target(e);
      const po = post[w]!;
      const ret = retained[po]!;
      sum += ret;
      retainedByHolder.set(edgeName(e), ret);
      const kinds = inside(po).slice(0, 6).map(([k, s]) => `${k} ${MiB(s)}`).join(', ');
      print(`${MiB(ret).padStart(8)} MiB  ${edgeName(e)}  ${kinds}`);
      print(`           by field: ${fields(po).slice(0, 10).map(([k, s]) => `${k} ${MiB(s)}`).join(', ')}`);
    }
    // Everything reachable from the holders, minus what each retains alone: held by two or more
    // (or also by something outside them, such as a module's cache).
    const seen = new Uint8Array(N);
    const stack = [holders];
    seen[holders] = 1;
    let reach = 0;
    while (stack.length > 0) {
      const v = stack.pop()!;
      reach += na[v * NF + nSelf]!;
      for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e++) if (strongEdge(e)) { const w = target(e); if (seen[w] === 0) { seen[w] = 1; stack.push(w); } }
    }
    print(`${MiB(reach - sum).padStart(8)} MiB  reachable from more than one holder or from outside`);
    print(`${MiB(reach).padStart(8)} MiB  reachable from the holders`);
  }

  print(`\n## largest retainers (dominator tree, retained >= ${values.minPct}% of the heap, not nested in a listed one)`);
  kids ??= childrenOf();
  const limit = (total * values.minPct) / 100;
  const stack = [rootPo];
  let listed = 0;
  while (stack.length > 0 && listed < top) {
    const i = stack.pop()!;
    const big = [...kids[i]!].filter((c) => retained[c]! >= limit);
    const single = retained[i]! >= limit && big.length <= 1 && i !== rootPo && (big.length === 0 || retained[big[0]!]! < retained[i]! * 0.9);
    if (single || (big.length === 0 && i !== rootPo)) {
      const kinds = inside(i).slice(0, 5).map(([k, s]) => `${k} ${MiB(s)}`).join(', ');
      print(`${MiB(retained[i]!).padStart(8)} MiB  ${kind(order[i]!)} via ${via[i]! >= 0 ? edgeName(via[i]!) : '?'} (under ${kind(order[idom[i]!]!)})  ${kinds}`);
      listed++;
      continue;
    }
    for (const c of big.sort((a, b) => retained[a]! - retained[b]!)) stack.push(c);
  }
  return retainedByHolder;
}

if (/heap-profile\.[jt]s$/.test(process.argv[1] ?? '')) {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '25' }, holders: { type: 'string', default: '__scaleHolders' }, 'min-pct': { type: 'string', default: '1' } } });
  if (positionals[0] === undefined) throw new Error('usage: heap-profile.ts <file.heapsnapshot> [--top N] [--holders NAME] [--min-pct P]');
  heapProfile(positionals[0], { top: Number(values.top), holders: values.holders, minPct: Number(values['min-pct']) });
}
