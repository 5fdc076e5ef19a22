/**
 * A real OCI registry on this host for the image test: Debian's docker-registry (the distribution
 * registry, v2; `make image` installs it) serving HTTPS on a free loopback port with a throwaway
 * self-signed certificate, its storage in a folder of the test's. `certDir` is the folder podman's
 * `--cert-dir` takes (ca.crt), as an operator points podman at the CA of their own registry.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { freePort } from '../../tools/control-plane/control-plane.ts';
import { eventually } from './cluster.ts';

export interface Registry {
  /** host:port, the registry part of an image reference. */
  readonly host: string;
  /** Folder with the registry's CA certificate (ca.crt), for `podman --cert-dir`. */
  readonly certDir: string;
  /** What the registry printed (for failure messages). */
  log(): string;
  stop(): void;
}

function v2Answers(port: number, ca: Buffer): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/v2/', ca, timeout: 2000, agent: false }, (res) => { res.resume(); resolve(res.statusCode === 200); });
    req.on('error', () => resolve(false)).on('timeout', () => req.destroy()).end();
  });
}

export async function startRegistry(dir: string): Promise<Registry> {
  const port = await freePort();
  const certDir = join(dir, 'certs');
  mkdirSync(certDir, { recursive: true });
  const key = join(dir, 'registry.key');
  const crt = join(certDir, 'ca.crt');
  const gen = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', crt], { encoding: 'utf8' });
  if (gen.status !== 0) throw new Error(`openssl: ${gen.stderr}`);
  const config = join(dir, 'config.yml');
  writeFileSync(config, [
    'version: 0.1', 'log:', '  level: warn',
    'storage:', '  filesystem:', `    rootdirectory: ${join(dir, 'data')}`,
    'http:', `  addr: 127.0.0.1:${port}`, '  tls:', `    certificate: ${crt}`, `    key: ${key}`, '',
  ].join('\n'));
  const proc = spawn('docker-registry', ['serve', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; });
  proc.stderr.setEncoding('utf8').on('data', (d: string) => { out += d; });
  const spawned = new Promise<never>((_, reject) => {
    proc.on('error', (e) => reject(new Error(`docker-registry (installed by make image): ${e.message}`)));
    proc.on('exit', (code) => reject(new Error(`docker-registry exited with ${code}: ${out}`)));
  });
  spawned.catch(() => undefined);
  const ca = readFileSync(crt);
  await Promise.race([spawned, eventually(() => v2Answers(port, ca), 15_000, 100)]);
  return { host: `127.0.0.1:${port}`, certDir, log: () => out, stop: () => { proc.kill('SIGKILL'); } };
}
