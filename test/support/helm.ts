/**
 * The cached helm binary with its own home folder (cache, config, data), so tests never read the
 * user's helm state or KUBECONFIG. `dispose()` removes the folder.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

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

/** Flags that say where the controller listens: a test process gives free local ports instead. */
const LISTEN_FLAGS = /^--(http-port|http-host|grpc-port|grpc-host)=/;

/**
 * The controller's arguments as the chart renders them with its default values (`helm template`,
 * release namespace `namespace`), without the listening flags: clusterd-ts "as the chart's defaults
 * run it" (leader election on, the chart's rescheduling settings) in a test process.
 */
export async function chartDefaultArgs(binDir: string, namespace = 'mindx-dl'): Promise<string[]> {
  const prev = process.env.CLUSTERD_TS_BIN_DIR;
  process.env.CLUSTERD_TS_BIN_DIR = binDir;
  const helm = helmRunner('chart-args');
  try {
    const chart = fileURLToPath(new URL('../../charts/clusterd-ts', import.meta.url));
    const out = await helm.run(['template', 'clusterd-ts', chart, '-n', namespace]);
    if (out.code !== 0) throw new Error(`helm template failed: ${out.stderr}`);
    type Doc = { kind?: string; spec?: { template?: { spec?: { containers?: Array<{ args?: string[] }> } } } } | null;
    const dep = parseAllDocuments(out.stdout).map((d) => d.toJS() as Doc).find((d) => d?.kind === 'Deployment');
    const args = dep?.spec?.template?.spec?.containers?.[0]?.args;
    if (args === undefined) throw new Error('the chart rendered no Deployment with args');
    return args.filter((a) => !LISTEN_FLAGS.test(a));
  } finally {
    helm.dispose();
    if (prev === undefined) delete process.env.CLUSTERD_TS_BIN_DIR; else process.env.CLUSTERD_TS_BIN_DIR = prev;
  }
}
