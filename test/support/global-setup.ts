/**
 * Starts one real etcd + kube-apiserver for the integration project (envtest's BeforeSuite).
 * Test files reach it through the JSON file named by CLUSTERD_TS_CONTROL_PLANE (see cluster.ts).
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ControlPlane, ensureBinaries } from '../../tools/control-plane/control-plane.ts';

export default async function globalSetup(): Promise<void> {
  if (process.env.CLUSTERD_TS_CONTROL_PLANE !== undefined) return; // already started by another project
  const t0 = Date.now();
  const binDir = ensureBinaries();
  process.env.CLUSTERD_TS_BIN_DIR = binDir;
  const cp = await ControlPlane.start({ binDir, workDir: join(tmpdir(), `clusterd-ts-test-${process.pid}`), scheduler: true, kwok: true });
  (globalThis as { __CONTROL_PLANE__?: ControlPlane }).__CONTROL_PLANE__ = cp;
  const infoFile = join(cp.dir, 'control-plane.json');
  writeFileSync(infoFile, JSON.stringify(cp.info()));
  process.env.CLUSTERD_TS_CONTROL_PLANE = infoFile;
  process.stdout.write(`\ncontrol plane ready in ${Date.now() - t0} ms (${cp.servers[0]})\n`);
}
