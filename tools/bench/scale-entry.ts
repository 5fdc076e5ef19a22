/**
 * The scale worker's process entry: `node --expose-gc tools/bench/scale-entry.ts --nodes N --npus 16
 * --update-seconds S`. Loads the Kubernetes client the way main.ts does (without its generated API,
 * runtime/client-node-slim.ts) before the worker's modules, so the in-process RSS carries the
 * controller's module floor and not the 45 MiB of API classes the controller never loads.
 */
import { parseArgs } from 'node:util';
import { registerClientNodeSlim } from '../../runtime/client-node-slim.ts';

registerClientNodeSlim();
const { runScale } = await import('./scale-worker.ts');
const { values } = parseArgs({ options: { nodes: { type: 'string' }, npus: { type: 'string', default: '16' }, 'update-seconds': { type: 'string', default: '10' } } });
const result = await runScale(Number(values.nodes), Number(values.npus), Number(values['update-seconds']));
process.stdout.write(`${JSON.stringify(result)}\n`);
