// Preload for a memory measurement (docs/benchmarks.md "Idle memory: the breakdown"):
//   PROBE_OUT=/tmp/m.json NODE_OPTIONS="<the image's> --expose-gc --import ./tools/bench/mem-probe.mjs" node <entry> ...
// then `kill -USR2 <pid>`: the figures as they are (`asIs`), then two full GCs and the figures
// again (top level: rss, heapUsed, heapTotal, external, pss, rssAnon, rssFile in MiB, and
// `spaces`), as one JSON object in $PROBE_OUT. Figures: process.memoryUsage(), V8's heap
// statistics (malloced memory, code and metadata) and heap spaces (used / committed / resident),
// /proc/self smaps_rollup and status.
import { readFileSync, writeFileSync } from 'node:fs';
import v8 from 'node:v8';

const mib = (b) => Math.round((b / 1048576) * 100) / 100;
const kb = (text, key) => mib(Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? Number.NaN) * 1024);

function figures() {
  const m = process.memoryUsage();
  const h = v8.getHeapStatistics();
  const c = v8.getHeapCodeStatistics();
  const rollup = readFileSync('/proc/self/smaps_rollup', 'utf8');
  const status = readFileSync('/proc/self/status', 'utf8');
  return {
    rss: mib(m.rss), heapUsed: mib(m.heapUsed), heapTotal: mib(m.heapTotal), external: mib(m.external), arrayBuffers: mib(m.arrayBuffers),
    pss: kb(rollup, 'Pss'), rssAnon: kb(status, 'RssAnon'), rssFile: kb(status, 'RssFile'), threads: Number(/^Threads:\s+(\d+)/m.exec(status)?.[1]),
    heapPhysical: mib(h.total_physical_size), mallocedMemory: mib(h.malloced_memory), peakMallocedMemory: mib(h.peak_malloced_memory),
    codeAndMetadata: mib(c.code_and_metadata_size), bytecodeAndMetadata: mib(c.bytecode_and_metadata_size), externalScriptSource: mib(c.external_script_source_size),
    spaces: Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, { used: mib(s.space_used_size), committed: mib(s.space_size), resident: mib(s.physical_space_size) }])),
  };
}

process.on('SIGUSR2', () => {
  const asIs = figures();
  globalThis.gc();
  globalThis.gc();
  writeFileSync(process.env.PROBE_OUT ?? '/dev/stderr', `${JSON.stringify({ ...figures(), asIs })}\n`);
});
