// What loading the gRPC protos costs (docs/benchmarks.md, the runtime floor): node --no-maglev --max-semi-space-size=1 --expose-gc tools/bench/protos-cost.mjs <mode>
// mode: none | import | text | json | server; prints RSS and heap after two GCs. A measuring tool, not part of the controller.
import { readFileSync } from 'node:fs';
const mode = process.argv[2];
const dir = new URL('../../grpc/protos/', import.meta.url).pathname;
const files = ['recover.proto', 'fault.proto', 'pubfault.proto', 'job.proto', 'config.proto', 'profiling.proto'].map((f) => dir + f);
const opts = { keepCase: true, longs: Number, enums: String, defaults: true, arrays: true, objects: true, oneofs: true };
let keep;
if (mode !== 'none') {
  const pl = await import('@grpc/proto-loader');
  const grpc = await import('@grpc/grpc-js');
  if (mode === 'text') keep = grpc.loadPackageDefinition(pl.loadSync(files, opts));
  if (mode === 'json') { const pb = (await import('protobufjs')).default; const root = new pb.Root(); root.loadSync(files, { keepCase: true }); const json = JSON.parse(JSON.stringify(root.toJSON())); globalThis.gc(); keep = grpc.loadPackageDefinition(pl.fromJSON(json, opts)); }
  if (mode === 'server') keep = [grpc.loadPackageDefinition(pl.loadSync(files, opts)), new grpc.Server()];
}
await new Promise((r) => setTimeout(r, 1500));
globalThis.gc(); globalThis.gc();
const m = process.memoryUsage();
const st = readFileSync('/proc/self/status', 'utf8');
const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(st)[1]) / 1024;
console.log(JSON.stringify({ mode, rss: +(m.rss / 1048576).toFixed(1), heapUsed: +(m.heapUsed / 1048576).toFixed(2), rssAnon: kb('RssAnon').toFixed(1), rssFile: kb('RssFile').toFixed(1) }));
globalThis.k = keep;
