/**
 * The cached helm binary with its own home folder (cache, config, data), so tests never read the
 * user's helm state or KUBECONFIG. `dispose()` removes the folder.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface HelmRun { readonly code: number; readonly stdout: string; readonly stderr: string }

export interface Helm {
  /** The runner's own folder (helm's homes live under it; tests may put values files there). */
  readonly home: string;
  run(args: readonly string[]): Promise<HelmRun>;
  dispose(): void;
}

export function helmRunner(prefix: string): Helm {
  const home = mkdtempSync(join(tmpdir(), `clusterd-ts-${prefix}-helm-`));
  return {
    home,
    run(args) {
      const binDir = process.env.CLUSTERD_TS_BIN_DIR;
      if (binDir === undefined) throw new Error('CLUSTERD_TS_BIN_DIR unset: run through jest --selectProjects integration');
      const env: NodeJS.ProcessEnv = { ...process.env, HELM_CACHE_HOME: join(home, 'cache'), HELM_CONFIG_HOME: join(home, 'config'), HELM_DATA_HOME: join(home, 'data') };
      delete env.KUBECONFIG;
      return new Promise((resolve) => {
        execFile(join(binDir, 'helm'), [...args], { env, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
          const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1;
          resolve({ code, stdout, stderr });
        });
      });
    },
    dispose: () => rmSync(home, { recursive: true, force: true }),
  };
}
