/**
 * main.ts as a container without a cluster starts it: no flags, no $KUBECONFIG, no ~/.kube/config,
 * not in a pod. It must say what to set and exit 2, not retry against localhost:8080 for ever; a
 * --kubeconfig that does not exist likewise.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));
const run = (args: string[]) => spawnSync(process.execPath, [MAIN, '--http-port=0', '--grpc-port=0', ...args], {
  env: { PATH: process.env.PATH, HOME: mkdtempSync(join(tmpdir(), 'no-kube-')) }, encoding: 'utf8', timeout: 60_000,
});

describe('main.ts without a cluster', () => {
  it('no cluster configuration anywhere: one error line naming what to set, exit 2', () => {
    const r = run([]);
    expect(r.status).toBe(2);
    const line = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { level: string; message: string; err: string };
    expect(line).toMatchObject({ level: 'error', message: 'cannot load the cluster configuration; exiting' });
    expect(line.err).toContain('pass --kubeconfig=<file> or run in a pod with a service account');
  });

  it('a --kubeconfig that does not exist: the same, naming the file', () => {
    const r = run(['--kubeconfig=/nonexistent/kubeconfig']);
    expect(r.status).toBe(2);
    expect(r.stdout).toContain('/nonexistent/kubeconfig');
  });
});
