/**
 * `kubectl clusterd` as an operator installs and runs it (README "kubectl clusterd", Install): the one
 * executable `make kubectl-clusterd` builds (tools/kubectl-plugin/build.ts, a Node single executable
 * application) is installed by krew from the generated manifest and the archive, then every subcommand
 * runs through kubectl (kubectl and krew built from Go modules by tools/k8s-bins) on a PATH that holds
 * no Node, as a ServiceAccount bound to cli/rbac.yaml, against what the apiserver holds:
 * - krew refuses the archive against a manifest whose sha256 is not the archive's, and installs it
 *   with the generated one; without krew, the executable copied from the archive onto PATH works too;
 * - published: `KUBECTL_CLUSTERD_URI=<url> make kubectl-clusterd` puts that url in the manifest (no
 *   rebuild), the archive is served there (a local HTTP server), and `kubectl krew install
 *   --manifest` downloads it from there and checks its sha256;
 * - the kubeconfig's current context points at no apiserver (exit 5); `--context` picks the real one;
 * - faults, explain, release, breaker status and breaker reset, as a table and with `-o json`, and
 *   their exit codes, through kubectl.
 */
import { execFile, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { paths } from '../../runtime/kube-client.ts';
import type { ConfigMap } from '../../runtime/kube-objects.ts';
import { ensureBinaries, freePort } from '../../tools/control-plane/control-plane.ts';
import { adminClient, controlPlaneInfo, newNamespace } from '../support/cluster.ts';
import { grantPluginRbac, newPluginUser, putCm, type PluginUser } from '../support/plugin-user.ts';
import { encodeDeviceInfoData, makeDeviceFault } from '../../schemas/device-info/device-info-encode.ts';
import { DEVICE_INFO_LABELS, deviceInfoCmName } from '../../schemas/device-info/device-info.ts';
import { buildDecisionRecord, decisionRecordsPath } from '../../schemas/decision-record/decision-record.ts';
import { RELEASE_REQUESTS_CM_NAME, parseReleaseRequests } from '../../schemas/release-request/release-request.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const DIST = join(REPO, 'dist');
const run = promisify(execFile);
const chips = Array.from({ length: 8 }, (_, i) => `Ascend910-${i}`);

interface Ran { code: number; stdout: string; stderr: string }

describe('kubectl clusterd, the packaged executable installed by krew, run through kubectl with no Node on PATH', () => {
  const admin = adminClient();
  const id = Math.random().toString(16).slice(2, 8);
  const tmp = mkdtempSync(join(tmpdir(), 'kc-sea-'));
  /** What the operator's shell has: krew's bin folder and a folder with kubectl and kubectl-krew. Nothing else. */
  const env = { HOME: join(tmp, 'home'), KREW_ROOT: join(tmp, 'krew'), KREW_NO_UPGRADE_CHECK: '1', PATH: `${join(tmp, 'krew', 'bin')}:${join(tmp, 'tools')}` };
  let archive = '';
  let manifest = '';
  let kubeconfig = '';
  let sre: PluginUser;
  let csNs = '';
  let ctlNs = '';
  let jobNs = '';
  const node = `sea-${id}`;

  /** `kubectl <args>` as typed in that shell (kubectl from PATH; exit code, stdout, stderr). */
  async function kubectl(args: readonly string[], shell: NodeJS.ProcessEnv = env): Promise<Ran> {
    try {
      const r = await run('kubectl', [...args], { env: shell, timeout: 60_000 });
      return { code: 0, stdout: r.stdout, stderr: r.stderr };
    } catch (e) {
      const x = e as { code?: number | string; stdout?: string; stderr?: string };
      return { code: typeof x.code === 'number' ? x.code : -1, stdout: x.stdout ?? '', stderr: `${x.stderr ?? ''}${typeof x.code === 'string' ? x.code : ''}` };
    }
  }
  /** `kubectl clusterd <sub...> --kubeconfig <file> --context ops <flags...>` */
  const clusterd = (sub: readonly string[], ...flags: string[]): Promise<Ran> => kubectl(['clusterd', ...sub, '--kubeconfig', kubeconfig, '--context', 'ops', ...flags]);

  /** `[KUBECTL_CLUSTERD_URI=<uri>] make kubectl-clusterd` (a no-op but for the manifest when its inputs are those of the last build); its first line. */
  function makeKubectlClusterd(uri?: string): string {
    const t0 = Date.now();
    const buildEnv = { ...process.env };
    if (uri === undefined) delete buildEnv.KUBECTL_CLUSTERD_URI;
    else buildEnv.KUBECTL_CLUSTERD_URI = uri;
    const b = spawnSync(process.execPath, [join(REPO, 'tools', 'kubectl-plugin', 'build.ts'), DIST], { encoding: 'utf8', env: buildEnv });
    if (b.status !== 0) throw new Error(`tools/kubectl-plugin/build.ts failed: ${b.stderr}${b.stdout}`);
    const first = b.stdout.split('\n')[0]!;
    process.stdout.write(`kubectl-clusterd ${first} (${Date.now() - t0} ms with the bundle check)\n`);
    return first;
  }

  beforeAll(async () => {
    makeKubectlClusterd();
    archive = join(DIST, `kubectl-clusterd-linux-${process.arch === 'arm64' ? 'arm64' : 'amd64'}.tar.gz`);
    manifest = join(DIST, 'clusterd.yaml');
    const bin = ensureBinaries();
    mkdirSync(join(tmp, 'tools'), { recursive: true });
    mkdirSync(env.HOME, { recursive: true });
    symlinkSync(join(bin, 'kubectl'), join(tmp, 'tools', 'kubectl'));
    symlinkSync(join(bin, 'krew'), join(tmp, 'tools', 'kubectl-krew'));

    csNs = await newNamespace(admin, 'cs');
    ctlNs = await newNamespace(admin, 'ctl');
    jobNs = await newNamespace(admin, 'jobs');
    sre = await newPluginUser(admin);
    await grantPluginRbac(admin, sre, csNs, `sea-${id}`, ctlNs);
    // Two contexts; the current one names an apiserver that is not there (a port just freed).
    const server = controlPlaneInfo().servers[0]!;
    const closed = await new Promise<number>((resolve) => { const s = createServer(); s.listen(0, '127.0.0.1', () => { const a = s.address() as AddressInfo; s.close(() => resolve(a.port)); }); });
    kubeconfig = join(tmp, 'kubeconfig');
    writeFileSync(kubeconfig, [
      'apiVersion: v1', 'kind: Config', 'current-context: elsewhere',
      'clusters:',
      '- name: nowhere', '  cluster:', `    server: https://127.0.0.1:${closed}`, '    insecure-skip-tls-verify: true',
      '- name: test', '  cluster:', `    server: ${server}`, '    insecure-skip-tls-verify: true',
      'users:', '- name: sre', '  user:', `    token: ${sre.token}`,
      'contexts:',
      '- name: elsewhere', '  context:', '    cluster: nowhere', '    user: sre',
      '- name: ops', '  context:', '    cluster: test', '    user: sre', '',
    ].join('\n'));
  }, 300_000);

  afterAll(async () => {
    // dist/clusterd.yaml as `make kubectl-clusterd` leaves it, not with the test's loopback uri.
    makeKubectlClusterd();
    rmSync(tmp, { recursive: true, force: true });
    // kube-system is shared with the other files' controllers: leave no device-info of a node that does not exist.
    await admin.delete(paths.configMap('kube-system', deviceInfoCmName(node))).catch(() => undefined);
  }, 60_000);

  it('krew installs the archive with the generated manifest (not with a sha256 that is not the archive\'s); no Node on that PATH', async () => {
    const which = (cmd: string): number | null => spawnSync('/bin/sh', ['-c', `command -v ${cmd}`], { env }).status;
    expect(which('node')).not.toBe(0);
    expect(which('kubectl')).toBe(0);
    expect(which('kubectl-clusterd')).not.toBe(0);

    const text = readFileSync(manifest, 'utf8');
    const sha = /sha256:\s*"([0-9a-f]{64})"/.exec(text)?.[1];
    expect(sha).toBe(spawnSync('sha256sum', [archive], { encoding: 'utf8' }).stdout.split(' ')[0]);
    const wrong = join(tmp, 'wrong-sha.yaml');
    writeFileSync(wrong, text.replace(sha!, '0'.repeat(64)));
    const refused = await kubectl(['krew', 'install', `--manifest=${wrong}`, `--archive=${archive}`]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/checksum|sha256/i);
    expect(which('kubectl-clusterd')).not.toBe(0);

    const installed = await kubectl(['krew', 'install', `--manifest=${manifest}`, `--archive=${archive}`]);
    expect({ code: installed.code, stderr: installed.stderr }).toEqual({ code: 0, stderr: expect.stringContaining('Installed plugin: clusterd') });
    expect(existsSync(join(env.KREW_ROOT, 'store', 'clusterd', 'v0.1.0', 'LICENSE'))).toBe(true);
    expect((await kubectl(['plugin', 'list'])).stdout).toContain(join(env.KREW_ROOT, 'bin', 'kubectl-clusterd'));
    expect(which('node')).not.toBe(0);
    const help = await kubectl(['clusterd', '--help']);
    expect(help.code).toBe(0);
    for (const sub of ['faults', 'explain', 'release', 'breaker']) expect(help.stdout).toMatch(new RegExp(`^\\s+${sub}\\b`, 'm'));
    // NODE_OPTIONS set for the operator's own Node tools does not reach the plugin's Node.
    const withOptions = await run('kubectl', ['clusterd', '--help'], { env: { ...env, NODE_OPTIONS: '--require=/no/such/preload.js' } });
    expect(withOptions.stdout).toBe(help.stdout);
  }, 120_000);

  it('published: the manifest of KUBECTL_CLUSTERD_URI=<url> make kubectl-clusterd names the url; krew downloads from it and installs only the archive with that sha256', async () => {
    // Another operator's machine: krew has nothing installed there (krew uninstall would need krew's index).
    const other = { ...env, KREW_ROOT: join(tmp, 'krew-other'), PATH: `${join(tmp, 'krew-other', 'bin')}:${join(tmp, 'tools')}` };
    // Where the operator uploads the archive: a folder served over HTTP on a free loopback port.
    const site = join(tmp, 'site');
    mkdirSync(site);
    const served: string[] = [];
    const server: Server = createHttpServer((req, res) => {
      served.push(`${req.method} ${req.url}`);
      const file = join(site, (req.url ?? '/').replace(/^\/+/, ''));
      if (req.method !== 'GET' || !existsSync(file) || (req.url ?? '').includes('..')) { res.writeHead(404).end(); return; }
      res.writeHead(200, { 'content-type': 'application/gzip' }).end(readFileSync(file));
    });
    const port = await freePort();
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    try {
      const name = archive.slice(archive.lastIndexOf('/') + 1);
      const uri = `http://127.0.0.1:${port}/releases/v0.1.0/${name}`;
      expect(makeKubectlClusterd(uri)).toMatch(/^unchanged /); // a new uri rewrites only the manifest
      const text = readFileSync(manifest, 'utf8');
      expect(/^\s*uri:\s*(.*)$/m.exec(text)?.[1]).toBe(uri);
      expect(/sha256:\s*"([0-9a-f]{64})"/.exec(text)?.[1]).toBe(spawnSync('sha256sum', [archive], { encoding: 'utf8' }).stdout.split(' ')[0]);
      mkdirSync(join(site, 'releases', 'v0.1.0'), { recursive: true });
      // Other bytes at that url (a stale or altered upload) are refused.
      writeFileSync(join(site, 'releases', 'v0.1.0', name), Buffer.concat([readFileSync(archive), Buffer.from('x')]));
      const refused = await kubectl(['krew', 'install', `--manifest=${manifest}`], other);
      expect({ code: refused.code, stderr: refused.stderr }).toEqual({ code: 1, stderr: expect.stringMatching(/checksum|sha256/i) });
      copyFileSync(archive, join(site, 'releases', 'v0.1.0', name));
      const installed = await kubectl(['krew', 'install', `--manifest=${manifest}`], other);
      expect({ code: installed.code, stderr: installed.stderr }).toEqual({ code: 0, stderr: expect.stringContaining('Installed plugin: clusterd') });
      expect(served).toEqual([`GET /releases/v0.1.0/${name}`, `GET /releases/v0.1.0/${name}`]);
      expect(existsSync(join(other.KREW_ROOT, 'store', 'clusterd', 'v0.1.0', 'kubectl-clusterd'))).toBe(true);
      expect((await kubectl(['clusterd', '--help'], other)).code).toBe(0);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  }, 120_000);

  it('without krew: the archive\'s kubectl-clusterd copied into a folder on PATH is the same plugin', async () => {
    const dir = join(tmp, 'copied');
    mkdirSync(dir);
    const x = spawnSync('tar', ['-xzf', archive, '-C', dir, 'kubectl-clusterd'], { encoding: 'utf8' });
    expect({ status: x.status, stderr: x.stderr }).toEqual({ status: 0, stderr: '' });
    const shell = { ...env, PATH: `${dir}:${join(tmp, 'tools')}` };
    expect(spawnSync('/bin/sh', ['-c', 'command -v node'], { env: shell }).status).not.toBe(0);
    const r = await run('kubectl', ['clusterd', 'breaker', 'status', '--kubeconfig', kubeconfig, '--context', 'ops', '--controller-namespace', ctlNs, '-o', 'json'], { env: shell });
    expect(JSON.parse(r.stdout)).toMatchObject({ present: false, scopes: [] });
  }, 60_000);

  it('--context picks the apiserver; the current context\'s unreachable one is exit 5; a bad flag is exit 2', async () => {
    const current = await kubectl(['clusterd', 'faults', '--kubeconfig', kubeconfig]);
    expect({ code: current.code, stderr: current.stderr }).toEqual({ code: 5, stderr: expect.stringMatching(/^error: /) });
    const picked = await clusterd(['faults'], '--cluster-system-namespace', csNs);
    expect({ code: picked.code, stderr: picked.stderr }).toEqual({ code: 0, stderr: '' });
    expect((await clusterd(['faults'], '--no-such-flag')).code).toBe(2);
  }, 60_000);

  it('faults: the device plugin\'s chip fault and its manual separation, as a table and as JSON', async () => {
    await putCm(admin, 'kube-system', deviceInfoCmName(node), encodeDeviceInfoData({
      available: chips.filter((c) => c !== 'Ascend910-3'), unhealthy: ['Ascend910-3'], updateTimeS: Math.floor(Date.now() / 1000), manuallySeparateNpu: ['Ascend910-5'],
      faults: [makeDeviceFault('CardUnhealthy', 'Ascend910-3', [{ code: '80E18402', level: 'SeparateNPU', timeMs: Date.now() }])],
    }), DEVICE_INFO_LABELS);
    const json = await clusterd(['faults'], '--node', node, '-o', 'json', '--cluster-system-namespace', csNs);
    expect({ code: json.code, stderr: json.stderr }).toEqual({ code: 0, stderr: '' });
    const rows = (JSON.parse(json.stdout) as { faults: Array<{ node: string; npu: string; code: string; level: string; rule: string; source: string }> }).faults;
    expect(rows).toEqual(expect.arrayContaining([
      expect.objectContaining({ node, npu: 'Ascend910-3', code: '80E18402', level: 'SeparateNPU', source: 'npu', rule: 'reported' }),
      expect.objectContaining({ node, npu: 'Ascend910-5', rule: expect.stringContaining('device plugin ManuallySeparateNPU key') }),
    ]));
    expect(rows.every((r) => r.node === node)).toBe(true);
    const table = await clusterd(['faults'], '--node', node, '--cluster-system-namespace', csNs);
    expect(table.stdout).toMatch(/^NODE\s+NPU\s+SOURCE\s+CODE\s+LEVEL\s+RULE\s+SINCE\s+EFFECT/);
    expect(table.stdout).toMatch(new RegExp(`^${node}\\s+Ascend910-3\\s+npu\\s+80E18402\\s+SeparateNPU\\s+reported`, 'm'));
  }, 60_000);

  it('explain: the job\'s decision record with its reason chain; an unknown job is exit 3', async () => {
    const rec = buildDecisionRecord({
      job: { namespace: jobNs, name: 'llama', uid: `uid-${id}` }, decisionId: `${jobNs}/llama-uid-${id}#1`, atMs: Date.now() - 5_000,
      kind: 'job', phase: 'decide', row: 2, outcome: 'acted',
      faults: [{ node, device: 'Ascend910-3', code: '80E18402', level: 'SeparateNPU' }],
      reasons: [{ stage: 'fault', detail: '80E18402 on Ascend910-3 is SeparateNPU' }, { stage: 'rule', detail: 'SeparateNPU in a job: reschedule it' }],
      actions: ['forceDeletePods(llama-0)'],
    });
    await admin.create(decisionRecordsPath(jobNs), { ...rec });
    const json = await clusterd(['explain', `${jobNs}/llama`], '-o', 'json');
    expect({ code: json.code, stderr: json.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({
      name: rec.metadata.name, decisionId: rec.spec.decisionId, outcome: 'acted', kind: 'job', actions: ['forceDeletePods(llama-0)'],
      faults: [expect.objectContaining({ code: '80E18402', level: 'SeparateNPU', node, device: 'Ascend910-3' })],
    })]);
    const text = await clusterd(['explain', `${jobNs}/llama`]);
    expect(text.stdout).toContain(`Decision history of ${jobNs}/llama (1 record, newest first)`);
    expect(text.stdout).toContain(`fault   80E18402 SeparateNPU on ${node}/Ascend910-3`);
    expect(text.stdout).toContain('because [fault] 80E18402 on Ascend910-3 is SeparateNPU');
    const missing = await clusterd(['explain', `${jobNs}/no-such-job`]);
    expect({ code: missing.code, stderr: missing.stderr }).toEqual({ code: 3, stderr: expect.stringContaining('no decision recorded') });
  }, 60_000);

  it('release: the chip leaves the device plugin\'s ManuallySeparateNPU key, and the request records who and when', async () => {
    const r = await clusterd(['release', node, 'Ascend910-5'], '-o', 'json', '--cluster-system-namespace', csNs);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    const out = JSON.parse(r.stdout) as { node: string; npus: string[]; by: string; at: string; paths: Array<{ path: string; released: string[] }> };
    expect(out).toMatchObject({ node, npus: ['Ascend910-5'], by: sre.user });
    expect(out.paths.find((x) => x.path === 'device-plugin')?.released).toEqual(['Ascend910-5']);
    expect((await admin.get<ConfigMap>(paths.configMap('kube-system', deviceInfoCmName(node)))).data?.ManuallySeparateNPU).toBe('');
    const reqs = parseReleaseRequests((await admin.get<ConfigMap>(paths.configMap(csNs, RELEASE_REQUESTS_CM_NAME))).data);
    expect(reqs.ok ? reqs.value.requests : reqs).toEqual([expect.objectContaining({ node, npus: ['Ascend910-5'], by: sre.user, at: out.at })]);
    const unknown = await clusterd(['release', node, 'Ascend910-12'], '--cluster-system-namespace', csNs);
    expect({ code: unknown.code, stderr: unknown.stderr }).toEqual({ code: 3, stderr: expect.stringContaining('unknown NPUs on') });
  }, 60_000);

  it('breaker status and reset: the stored scopes, and the reset request written on the ConfigMap with who and when', async () => {
    const state = { windowSeconds: 600, scopes: [{ scope: 'cluster', tripped: false, trippedAt: null, reason: '', held: 0 }, { scope: 'rack-7', tripped: true, trippedAt: '2026-01-02T03:04:05Z', reason: '9 nodes isolated in 60 s > 8', held: 3 }] };
    const ns = ['--controller-namespace', ctlNs];
    const none = await clusterd(['breaker', 'status'], ...ns);
    expect({ code: none.code, stdout: none.stdout }).toEqual({ code: 0, stdout: 'no breaker state\n' });
    await putCm(admin, ctlNs, 'clusterd-ts-breaker', { state: JSON.stringify(state) });
    const json = await clusterd(['breaker', 'status'], '-o', 'json', ...ns);
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as { scopes: unknown[] }).scopes).toEqual([expect.objectContaining({ scope: 'rack-7', tripped: true, held: 3, reason: '9 nodes isolated in 60 s > 8' })]);
    const table = await clusterd(['breaker', 'status'], ...ns);
    expect(table.stdout).toMatch(/^rack-7\s+yes\s+2026-01-02T03:04:05(\.000)?Z\s+3\s+0\/0\/0\s+9 nodes isolated/m);
    expect(table.stdout).toContain('window: 600 s');
    const reset = await clusterd(['breaker', 'reset', 'rack-7'], ...ns);
    expect({ code: reset.code, stdout: reset.stdout }).toEqual({ code: 0, stdout: expect.stringMatching(/^breaker reset requested for scope rack-7 by system:serviceaccount:/) });
    const cm = await admin.get<ConfigMap>(paths.configMap(ctlNs, 'clusterd-ts-breaker'));
    expect(JSON.parse(cm.metadata?.annotations?.['clusterd-ts.io/breaker-reset'] ?? '{}')).toEqual({ scope: 'rack-7', by: sre.user, at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    expect((await clusterd(['breaker', 'reset', 'cluster'], ...ns)).code).toBe(3); // not tripped
  }, 60_000);
});
