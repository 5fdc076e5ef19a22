// Preload for a memory floor measurement (docs/benchmarks.md "One bundled file"):
//   PROBE_OUT=/tmp/m.json NODE_OPTIONS="<the image's> --expose-gc --import ./tools/bench/mem-probe.mjs" node <entry> ...
// then `kill -USR2 <pid>`: two full GCs, then process.memoryUsage() and /proc/self smaps_rollup and
// status figures (MiB) as one JSON object in $PROBE_OUT.
import { readFileSync, writeFileSync } from 'node:fs';

process.on('SIGUSR2', () => {
  globalThis.gc();
  globalThis.gc();
  const mib = (b) => b / 1048576;
  const kb = (text, key) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? Number.NaN) / 1024;
  const m = process.memoryUsage();
  const rollup = readFileSync('/proc/self/smaps_rollup', 'utf8');
  const status = readFileSync('/proc/self/status', 'utf8');
  writeFileSync(process.env.PROBE_OUT ?? '/dev/stderr', `${JSON.stringify({
    rss: mib(m.rss), heapUsed: mib(m.heapUsed), heapTotal: mib(m.heapTotal), external: mib(m.external),
    pss: kb(rollup, 'Pss'), rssAnon: kb(status, 'RssAnon'), rssFile: kb(status, 'RssFile'),
  })}\n`);
});
