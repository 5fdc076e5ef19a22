/**
 * The Helm chart (charts/clusterd-ts) and the image it points at: lint, rendering with defaults and
 * with every optional feature on, values.schema.json mirroring controllers/options.ts, the rendered
 * manifests accepted by the real kube-apiserver (server-side dry run, strict field validation),
 * `helm install` into a fresh namespace, and least-privilege RBAC checked with SubjectAccessReviews,
 * the ServiceAccount's own token, and the controller's informers running under that token.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { ApiError, paths, type KubeObject } from '../../runtime/kube-client.ts';
import { FLAGS, parseOptions } from '../../controllers/options.ts';
import { LEADER_LEASE_NAME } from '../../controllers/manager.ts';
import { LEADER_LABEL, LEADER_LABEL_VALUE } from '../../actions/leader-label.action.ts';
import { createSources, sourcesHealth, startSources, stopSources, waitForSync } from '../../controllers/sources/sources.ts';
import { RECOVERY_STATE_NAMESPACE } from '../../reconcilers/recovery-state.reconciler.ts';
import { JOB_STATE_NAMESPACE } from '../../schemas/job-state/job-state.ts';
import { LeaderElector } from '../../runtime/leader-election.ts';
import { silentLogger } from '../../telemetry/logger.ts';
import { Metrics } from '../../telemetry/metrics.ts';
import { helmRunner, type HelmRun } from '../support/helm.ts';
import { adminClient, controlPlaneInfo, ensureNamespace, eventually, newNamespace, serviceAccountClient } from '../support/cluster.ts';
import { realClock } from '../../runtime/clock.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const CHART = join(REPO, 'charts', 'clusterd-ts');

// ---- helm -------------------------------------------------------------------------------------

const helmBin = helmRunner('chart');
const helm = (args: readonly string[]): Promise<HelmRun> => helmBin.run(args);
const helmHome = helmBin.home;

let valuesSeq = 0;
function valuesFile(values: unknown): string {
  const f = join(helmHome, `values-${++valuesSeq}.json`);
  writeFileSync(f, JSON.stringify(values));
  return f;
}

// ---- rendered manifests -----------------------------------------------------------------------

interface Meta { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string>; [k: string]: unknown }
interface Doc { apiVersion: string; kind: string; metadata: Meta; [k: string]: unknown }
interface EnvVar { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }
interface Container {
  name: string; image: string; imagePullPolicy: string; args: string[]; env: EnvVar[];
  ports: Array<{ name: string; containerPort: number }>;
  livenessProbe: { httpGet: { path: string; port: string } }; readinessProbe: { httpGet: { path: string; port: string } };
  resources: { requests: Record<string, string>; limits: Record<string, string> };
  securityContext: Record<string, unknown>; volumeMounts: Array<{ name: string; mountPath: string }>;
}
interface PodSpec {
  serviceAccountName: string; securityContext: Record<string, unknown>; containers: Container[];
  volumes: Array<{ name: string; secret?: { secretName: string } }>;
  nodeSelector?: Record<string, string>; tolerations?: unknown[]; affinity?: Record<string, unknown>;
  topologySpreadConstraints?: unknown[]; priorityClassName?: string; imagePullSecrets?: unknown[];
}
interface Deployment extends Doc { spec: { replicas: number; selector: { matchLabels: Record<string, string> }; template: { metadata: Meta; spec: PodSpec } } }
interface Rule { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }
interface RbacRole extends Doc { rules: Rule[] }
interface Binding extends Doc { roleRef: { kind: string; name: string }; subjects: Array<{ kind: string; name: string; namespace: string }> }
interface Service extends Doc { spec: { selector: Record<string, string>; ports: Array<{ name: string; port: number; targetPort: string }> } }

class Rendered {
  readonly docs: Doc[];
  constructor(yamlText: string) {
    this.docs = parseAllDocuments(yamlText).map((d) => d.toJS() as Doc | null).filter((d): d is Doc => d !== null);
  }
  kinds(): string[] { return this.docs.map((d) => d.kind).sort(); }
  all(kind: string): Doc[] { return this.docs.filter((d) => d.kind === kind); }
  one<T extends Doc>(kind: string): T {
    const found = this.all(kind);
    if (found.length !== 1) throw new Error(`expected one ${kind}, found ${found.length}`);
    return found[0] as T;
  }
  get deployment(): Deployment { return this.one<Deployment>('Deployment'); }
  get container(): Container { return this.deployment.spec.template.spec.containers[0]!; }
}

async function render(ns: string, extra: readonly string[] = [], release = 'clusterd-ts'): Promise<Rendered> {
  const r = await helm(['template', release, CHART, '-n', ns, ...extra]);
  if (r.code !== 0) throw new Error(`helm template failed: ${r.stderr}`);
  return new Rendered(r.stdout);
}

const FIELD_STUBS: Record<string, string> = { 'spec.nodeName': 'node-a', 'status.podIP': '10.1.2.3' };

/** The container's environment as the kubelet would resolve it. */
function resolveEnv(c: Container, ns: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of c.env) {
    const path = e.valueFrom?.fieldRef?.fieldPath;
    out[e.name] = path === 'metadata.namespace' ? ns : path !== undefined ? FIELD_STUBS[path]! : e.value ?? '';
  }
  return out;
}

// ---- flags of controllers/options.ts ----------------------------------------------------------

interface FlagSpecLike { type: 'string' | 'boolean' | 'number'; default: string | number | boolean; env?: string; min?: number; max?: number; choices?: readonly string[] }
const FLAG_LIST = Object.entries(FLAGS as Record<string, FlagSpecLike>);
const camel = (s: string): string => s.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
/** Flags that are not a `controller.<camelCase>` value, and where the chart sets them instead. */
const NOT_A_CONTROLLER_VALUE: Record<string, string> = {
  'grpc-tls-cert': 'grpc.tls (Secret volume)',
  'grpc-tls-key': 'grpc.tls (Secret volume)',
  'node-name': 'env NODE_NAME (downward API)',
};
/** The chart needs fixed ports (probes, Service), so 0 (= any free port) is not allowed there. */
const PORT_FLAGS = new Set(['http-port', 'grpc-port']);
const chartMin = (flag: string, spec: FlagSpecLike): number => (PORT_FLAGS.has(flag) ? Math.max(1, spec.min!) : spec.min!);

const schema = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as {
  properties: { controller: { properties: Record<string, { type?: string; minimum?: number; maximum?: number; enum?: string[] } & Record<string, unknown>> } };
  definitions: Record<string, { minimum?: number; maximum?: number; type?: string }>;
};
const controllerSchema = (key: string): { type?: string; minimum?: number; maximum?: number; enum?: string[] } => {
  const p = schema.properties.controller.properties[key];
  if (p === undefined) throw new Error(`values.schema.json has no controller.${key}`);
  const ref = p.$ref as string | undefined;
  return ref === undefined ? p : schema.definitions[ref.replace('#/definitions/', '')]!;
};
const defaultValues = parseYaml(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as { controller: Record<string, unknown>; image: { repository: string; tag: string } };

// ---- one run's names --------------------------------------------------------------------------

const suffix = randomBytes(3).toString('hex');
const RELEASE = `cts-${suffix}`;
const FULLNAME = `${RELEASE}-clusterd-ts`;

function allFeatureValues(ns: string, leaseNs: string): Record<string, unknown> {
  return {
    replicas: 3,
    image: { repository: 'registry.example.com/mindx/clusterd-ts', tag: '9.9.9', digest: '', pullPolicy: 'Always' },
    imagePullSecrets: [{ name: 'regcred' }],
    controller: {
      logLevel: 'debug', httpPort: 12253, httpHost: '::', grpcPort: 18899, grpcHost: '::', maxServedJobs: 500, grpcUnaryQps: 200,
      grpcCallerCheck: 'off', grpcSystemNamespaces: 'ops,mindx-dl', grpcMaxRolesPerJob: 4, grpcMaxPublishersPerClient: 8, grpcMaxFaultPublishers: 100, grpcStreamMaxPending: 16,
      recoveryReportTimeoutSeconds: 600, recoveryTimings: 'preExitWait=5000,flush=500', recoveryFeedWindowMs: 50, hotSwitchNewPodTimeoutSeconds: 120, hotSwitchBackupPods: true,
      rescheduling: false, rescheduleBesideAscendPlugin: true, dryRun: true, leaderElect: true, leaderElectionNamespace: leaseNs, leaseDurationSeconds: 30,
      graceOverTimeSeconds: 1200, pendingEscalationSeconds: 120, rackEscalationMs: 2000, superPodEscalationMs: 5000, clusterInfoRefreshSeconds: 20, burstWindowMs: 500,
      decisionHistoryPerJob: 20, decisionHistoryMaxRecords: 900, decisionHistoryTtlHours: 48,
      clusterInfoRefreshAnnotation: true, nodeTaints: true, nodeTaintHoldSeconds: 30, refuseMalformedJobIdentity: false, devicePluginRules: true, trustPodNpuAnnotations: true, persistPolicyState: false,
      breakerWindowSeconds: 300, breakerDomainNodes: 4, breakerDomainChips: 16, breakerDomainJobs: 8, breakerClusterNodes: 80, breakerClusterChips: 320,
      breakerClusterJobs: 100, breakerAutoResetSeconds: 3600, breakerDomainLabel: 'example.com/rack', linkDownMemorySeconds: 60, relationFaultConfigDir: '/etc/clusterd-relation', flapDampingSeconds: 60, flapDampingRecoveries: 3, flapDampingWindowSeconds: 120,
      clusterSystemNamespace: `${ns}-cs`, pingmesh: false, pingmeshCheckIntervalMs: 1000, maxPublicFaults: 1000, publicFaultNamespaces: 'ascend-senders,mindx-dl', publicFaultUnknownNodes: true, outputLimits: false, maxSeriesPerMetric: 200, kubeconfig: '/etc/clusterd-ts/kubeconfig/config', extraArgs: ['--log-level=warn'],
    },
    networkPolicy: {
      enabled: true,
      grpc: { from: [{ namespaceSelector: { matchLabels: { 'ascend.training': 'true' } } }] },
      prometheus: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'observability' } }, podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus', shard: '0' } } },
    },
    grpc: { tls: { enabled: true, secretName: 'clusterd-grpc-tls', certKey: 'server.pem', keyKey: 'server-key.pem', mountPath: '/etc/clusterd-ts/tls' } },
    serviceAccount: { create: true, name: 'clusterd', annotations: { 'example.com/owner': 'ascend' }, automountServiceAccountToken: true },
    service: { name: 'clusterd-grpc-svc', type: 'ClusterIP', annotations: { 'example.com/a': 'b' }, labels: { team: 'ascend' }, grpcPort: 8899, metricsPort: 11253 },
    podDisruptionBudget: { enabled: true, minAvailable: 2 },
    serviceMonitor: { enabled: true, namespace: '', labels: { release: 'prometheus' }, interval: '15s', scrapeTimeout: '5s' },
    prometheusRule: { enabled: true, namespace: '', labels: { release: 'prometheus' } },
    dashboards: { enabled: true, namespace: ns, labels: { grafana_dashboard: '1' }, annotations: { grafana_folder: 'MindCluster' } },
    extraNamespaces: { create: true, names: [`${ns}-a`, `${ns}-b`, ns] },
    nodeSelector: { masterselector: 'dls-master-node' },
    tolerations: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' }],
    affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/os', operator: 'In', values: ['linux'] }] }] } } },
    topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { 'app.kubernetes.io/name': 'clusterd-ts' } } }],
    priorityClassName: 'system-cluster-critical',
    terminationGracePeriodSeconds: 45,
    podAnnotations: { 'example.com/scrape': 'true' },
    podLabels: { tier: 'control' },
    extraEnv: [{ name: 'NODE_OPTIONS', value: '--max-old-space-size=768' }],
    extraVolumes: [{ name: 'kubeconfig', secret: { secretName: 'clusterd-kubeconfig' } }],
    extraVolumeMounts: [{ name: 'kubeconfig', mountPath: '/etc/clusterd-ts/kubeconfig', readOnly: true }],
  };
}

/** The ClusterRole with default values: exactly these rules. */
const DEFAULT_RULES: Rule[] = [
  { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch'] },
  // ClusterD deletes clusterd-manual-info-cm once nothing is separated and job-summary-<job> in job
  // namespaces once the job is gone; so do we (job namespaces vary: cluster-wide, as ClusterD's).
  { apiGroups: [''], resources: ['configmaps'], verbs: ['delete'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'patch', 'delete'] },
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch', 'patch'] },
  { apiGroups: ['scheduling.volcano.sh'], resources: ['podgroups'], verbs: ['get', 'list', 'watch', 'update', 'patch'] },
  { apiGroups: ['batch.volcano.sh'], resources: ['jobs'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['mindxdl.gitee.com'], resources: ['ascendjobs'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['clusterd-ts.io'], resources: ['decisionrecords'], verbs: ['list', 'create', 'delete'] },
  { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
];
const LEASE_RULES: Rule[] = [
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: [LEADER_LEASE_NAME], verbs: ['get', 'update'] },
];
const STATE_RULES: Rule[] = [{ apiGroups: [''], resources: ['configmaps'], verbs: ['delete'] }];
/** The leader label on the controller's own pods (release namespace), which the gRPC Service selects. */
const LEADER_LABEL_RULES: Rule[] = [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'patch'] }];
/** --dry-run: reads only, no Events either (the controller posts none: ops-leader-routing.test.ts). */
const readOnly = (rules: Rule[]): Rule[] => rules
  .map((r) => ({ ...r, verbs: r.verbs.filter((v) => ['get', 'list', 'watch'].includes(v)) }))
  .filter((r) => r.verbs.length > 0);

afterAll(() => helmBin.dispose());

describe('helm chart charts/clusterd-ts: lint and schema', () => {
  it('passes helm lint, also with --strict, with defaults and with every optional feature on', async () => {
    const all = valuesFile(allFeatureValues('mindx-dl', 'mindx-dl'));
    for (const args of [['lint', CHART], ['lint', '--strict', CHART], ['lint', '--strict', CHART, '-f', all]]) {
      const r = await helm(args);
      expect({ args: args.join(' '), code: r.code, out: r.stdout + r.stderr }).toEqual(expect.objectContaining({ code: 0 }));
      expect(r.stdout).toContain('0 chart(s) failed');
      expect(r.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
    }
  });

  it('has one value per controller flag, with the type, range, choices and default of controllers/options.ts', () => {
    const props = schema.properties.controller.properties;
    for (const [flag, spec] of FLAG_LIST) {
      if (flag in NOT_A_CONTROLLER_VALUE) { expect(props[camel(flag)]).toBeUndefined(); continue; }
      const s = controllerSchema(camel(flag));
      if (spec.type === 'number') {
        expect({ flag, type: s.type, min: s.minimum, max: s.maximum }).toEqual({ flag, type: 'integer', min: chartMin(flag, spec), max: spec.max });
      } else if (spec.type === 'boolean') {
        expect({ flag, type: s.type }).toEqual({ flag, type: 'boolean' });
      } else if (spec.choices !== undefined) {
        expect({ flag, enum: s.enum }).toEqual({ flag, enum: [...spec.choices] });
      }
      // values.yaml defaults are the controller's, except where the chart decides differently.
      const chartDefault = defaultValues.controller[camel(flag)];
      const expected = flag === 'leader-elect' ? true : spec.env === 'POD_IP' || spec.env === 'POD_NAMESPACE' ? '' : spec.default;
      expect({ flag, default: chartDefault }).toEqual({ flag, default: expected });
    }
    // ... and nothing else under controller.
    const flagKeys = new Set(FLAG_LIST.map(([f]) => camel(f)));
    expect(Object.keys(props).filter((k) => !flagKeys.has(k))).toEqual(['extraArgs']);
  });

  it('documents every flag in the chart README\'s values table', () => {
    const readme = readFileSync(join(CHART, 'README.md'), 'utf8');
    expect(FLAG_LIST.map(([f]) => f).filter((f) => !readme.includes(`| \`--${f}\``) && !readme.includes(`\`--${f}\` =`))).toEqual([]);
  });

  const REJECTED: Array<[name: string, args: string[], message: string]> = [
    ['replicas: "two"', ['--set', 'replicas=two'], "'/replicas': got string, want integer"],
    ['graceOverTimeSeconds: 5000', ['--set', 'controller.graceOverTimeSeconds=5000'], "'/controller/graceOverTimeSeconds': maximum"],
    ['logLevel: verbose', ['--set', 'controller.logLevel=verbose'], "'/controller/logLevel'"],
    ['dryRun: "yes"', ['--set-string', 'controller.dryRun=yes'], "'/controller/dryRun': got string, want boolean"],
    ['an unknown controller value', ['--set', 'controller.gracePeriod=5'], "additional properties 'gracePeriod' not allowed"],
    ['an unknown top-level value', ['--set', 'replicaCount=2'], "additional properties 'replicaCount' not allowed"],
    ['image.pullPolicy: Sometimes', ['--set', 'image.pullPolicy=Sometimes'], "'/image/pullPolicy'"],
    ['grpc TLS without a Secret', ['--set', 'grpc.tls.enabled=true'], "'/grpc/tls/secretName'"],
    ['resources.limits.memory: lots', ['--set', 'resources.limits.memory=lots'], "'/resources/limits/memory'"],
    ['httpPort: 0 (probes need a fixed port)', ['--set', 'controller.httpPort=0'], "'/controller/httpPort': minimum"],
    ['the same port twice', ['--set', 'controller.httpPort=8899'], 'controller.httpPort and controller.grpcPort must differ'],
    ['2 replicas without leader election', ['--set', 'controller.leaderElect=false'], 'replicas > 1 requires controller.leaderElect=true'],
    ['the leader label in podLabels', ['--set-string', `podLabels.${LEADER_LABEL.replace(/\./g, '\\.')}=true`], `podLabels must not set ${LEADER_LABEL}`],
  ];
  it.each(REJECTED)('rejects %s', async (_name, args, message) => {
    const r = await helm(['template', 'x', CHART, ...args]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(message);
  });

  it('rejects every numeric flag just outside its range and accepts both ends', async () => {
    const numeric = FLAG_LIST.filter(([, s]) => s.type === 'number');
    for (const [flag, spec] of numeric) {
      for (const bad of [chartMin(flag, spec) - 1, spec.max! + 1]) {
        const r = await helm(['template', 'x', CHART, '--set', `controller.${camel(flag)}=${bad}`]);
        expect({ flag, bad, code: r.code }).toEqual({ flag, bad, code: 1 });
        expect(r.stderr).toContain(`'/controller/${camel(flag)}'`);
      }
    }
    // All at the minimum, then all at the maximum (ports kept apart); the controller accepts the result.
    for (const end of ['min', 'max'] as const) {
      const set = numeric.map(([flag, spec]) => {
        const v = flag === 'grpc-port' ? (end === 'min' ? spec.max! : 1) : end === 'min' ? chartMin(flag, spec) : spec.max!;
        return `controller.${camel(flag)}=${v}`;
      });
      const out = await render('mindx-dl', ['--set', set.join(',')]);
      const opts = parseOptions(out.container.args, resolveEnv(out.container, 'mindx-dl')) as unknown as Record<string, unknown>;
      for (const [flag, spec] of numeric) {
        const want = flag === 'grpc-port' ? (end === 'min' ? spec.max : 1) : end === 'min' ? chartMin(flag, spec) : spec.max;
        expect({ flag, value: opts[camel(flag)] }).toEqual({ flag, value: want });
      }
    }
  }, 60_000);
});

describe('helm chart charts/clusterd-ts: rendering', () => {
  it('renders ClusterD\'s deployment with defaults: 2 replicas, leader election, probes, non-root, read-only root', async () => {
    const out = await render('mindx-dl', [], 'clusterd-ts');
    expect(out.kinds()).toEqual(['ClusterRole', 'ClusterRoleBinding', 'Deployment', 'PodDisruptionBudget', 'Role', 'Role', 'Role', 'RoleBinding', 'RoleBinding', 'RoleBinding', 'Service', 'Service', 'ServiceAccount']);
    for (const d of out.docs) if (!d.kind.startsWith('Cluster')) expect({ kind: d.kind, ns: d.metadata.namespace }).toEqual({ kind: d.kind, ns: 'mindx-dl' });

    const dep = out.deployment;
    const pod = dep.spec.template.spec;
    const c = out.container;
    expect(dep.spec.replicas).toBe(2);
    expect(c.args).toContain('--leader-elect=true');
    expect(c.image).toBe(`clusterd-ts:${readChartYaml().appVersion}`);
    expect(c.imagePullPolicy).toBe('IfNotPresent');
    expect(pod.serviceAccountName).toBe('clusterd');
    expect(c.ports).toEqual([{ name: 'grpc', containerPort: 8899, protocol: 'TCP' }, { name: 'http', containerPort: 11253, protocol: 'TCP' }]);
    expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(c.resources).toEqual({ requests: { cpu: '100m', memory: '256Mi' }, limits: { cpu: '1', memory: '1Gi' } });
    expect(pod.securityContext).toEqual(expect.objectContaining({ runAsNonRoot: true, runAsUser: 9000, runAsGroup: 9000 }));
    expect(c.securityContext).toEqual(expect.objectContaining({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, runAsUser: 9000, capabilities: { drop: ['ALL'] } }));
    expect(c.env.map((e) => [e.name, e.valueFrom?.fieldRef?.fieldPath])).toEqual([['NODE_NAME', 'spec.nodeName'], ['POD_NAME', 'metadata.name'], ['POD_IP', 'status.podIP'], ['POD_NAMESPACE', 'metadata.namespace']]);

    // The controller parses the rendered arguments to its own defaults, plus leader election.
    const expected: Record<string, unknown> = Object.fromEntries(FLAG_LIST.map(([f, s]) => [camel(f), s.default]));
    Object.assign(expected, { leaderElect: true, leaderElectionNamespace: 'mindx-dl', grpcHost: FIELD_STUBS['status.podIP'], nodeName: FIELD_STUBS['spec.nodeName'] });
    expect(parseOptions(c.args, resolveEnv(c, 'mindx-dl'))).toEqual(expected);

    // gRPC listens on the leader only: its Service selects the label the leader puts on its own pod
    // (never in the pod template); the metrics Service selects every replica.
    const svc = named<Service>(out, 'Service', 'clusterd-grpc-svc');
    expect(svc.spec.ports.map((p) => [p.name, p.port, p.targetPort])).toEqual([['grpc', 8899, 'grpc']]);
    expect(svc.spec.selector).toEqual({ ...dep.spec.selector.matchLabels, [LEADER_LABEL]: LEADER_LABEL_VALUE });
    expect(dep.spec.template.metadata.labels).not.toHaveProperty([LEADER_LABEL]);
    const metricsSvc = named<Service>(out, 'Service', 'clusterd-ts-metrics');
    expect(metricsSvc.spec.ports.map((p) => [p.name, p.port, p.targetPort])).toEqual([['http-metrics', 11253, 'http']]);
    expect(metricsSvc.spec.selector).toEqual(dep.spec.selector.matchLabels);
    expect(out.one<Doc & { spec: { minAvailable: number } }>('PodDisruptionBudget').spec.minAvailable).toBe(1);
    expect(out.one('ServiceAccount').metadata.name).toBe('clusterd');

    expect(sortRules(out.one<RbacRole>('ClusterRole').rules)).toEqual(sortRules(DEFAULT_RULES));
    expect(named<RbacRole>(out, 'Role', 'clusterd-ts-leader-election').rules).toEqual(LEASE_RULES);
    const labelRole = named<RbacRole>(out, 'Role', 'clusterd-ts-leader-label');
    expect([labelRole.metadata.namespace, labelRole.rules]).toEqual(['mindx-dl', LEADER_LABEL_RULES]);
    const state = named<RbacRole>(out, 'Role', 'clusterd-ts-state');
    expect(state.rules).toEqual(STATE_RULES);
    expect([state.metadata.namespace, state.metadata.namespace]).toEqual([JOB_STATE_NAMESPACE, RECOVERY_STATE_NAMESPACE]);
    for (const b of [out.one<Binding>('ClusterRoleBinding'), ...out.all('RoleBinding') as Binding[]]) {
      expect(b.subjects).toEqual([{ kind: 'ServiceAccount', name: 'clusterd', namespace: 'mindx-dl' }]);
    }
  });

  it('follows the flags: read only in --dry-run, pods/delete only with --rescheduling, pods/create only with --hot-switch-backup-pods, the Lease and leader-label Roles only with --leader-elect', async () => {
    const podVerbs = (r: Rendered): string[] => r.one<RbacRole>('ClusterRole').rules.find((x) => x.resources.includes('pods'))!.verbs;
    const dry = await render('mindx-dl', ['--set', 'controller.dryRun=true,controller.hotSwitchBackupPods=true']);
    expect(sortRules(dry.one<RbacRole>('ClusterRole').rules)).toEqual(sortRules(readOnly(DEFAULT_RULES)));
    expect(dry.one<RbacRole>('ClusterRole').rules.some((r) => r.resources.includes('events'))).toBe(false);
    expect(dry.all('Role').map((r) => r.metadata.name)).toEqual(['clusterd-ts-leader-election', 'clusterd-ts-leader-label']);
    expect(podVerbs(await render('mindx-dl', ['--set', 'controller.rescheduling=false']))).toEqual(['get', 'list', 'watch', 'patch']);
    expect(podVerbs(await render('mindx-dl', ['--set', 'controller.hotSwitchBackupPods=true']))).toEqual(['get', 'list', 'watch', 'patch', 'delete', 'create']);
    const single = await render('mindx-dl', ['--set', 'replicas=1,controller.leaderElect=false']);
    expect(single.all('Role').map((r) => r.metadata.name)).toEqual(['clusterd-ts-state']);
    expect(single.container.args).toContain('--leader-elect=false');
    // One replica without election always acts and nobody sets the leader label.
    expect(named<Service>(single, 'Service', 'clusterd-grpc-svc').spec.selector).toEqual(single.deployment.spec.selector.matchLabels);
  });

  it('renders every optional feature, and every controller flag is reachable from values', async () => {
    const ns = 'ns-under-test';
    const FULL_ALL = 'clusterd-ts'; // release name clusterd-ts (render's default)
    const out = await render(ns, ['-f', valuesFile(allFeatureValues(ns, 'lease-ns'))]);
    expect(out.kinds()).toEqual(['ClusterRole', 'ClusterRoleBinding', 'ConfigMap', 'Deployment', 'Namespace', 'Namespace', 'Namespace', 'NetworkPolicy', 'PodDisruptionBudget', 'PrometheusRule', 'Role', 'Role', 'RoleBinding', 'RoleBinding', 'Service', 'Service', 'ServiceAccount', 'ServiceMonitor']);
    const c = out.container;
    const pod = out.deployment.spec.template.spec;

    // Every flag ends up at the value set in values (extraArgs come last and win).
    const opts = parseOptions(c.args, resolveEnv(c, ns)) as unknown as Record<string, unknown>;
    const want: Record<string, unknown> = {
      kubeconfig: '/etc/clusterd-ts/kubeconfig/config', logLevel: 'warn', httpPort: 12253, httpHost: '::', grpcPort: 18899, grpcHost: '::',
      grpcTlsCert: '/etc/clusterd-ts/tls/server.pem', grpcTlsKey: '/etc/clusterd-ts/tls/server-key.pem', maxServedJobs: 500, grpcUnaryQps: 200,
      grpcCallerCheck: 'off', grpcSystemNamespaces: 'ops,mindx-dl', grpcMaxRolesPerJob: 4, grpcMaxPublishersPerClient: 8, grpcMaxFaultPublishers: 100, grpcStreamMaxPending: 16,
      recoveryReportTimeoutSeconds: 600, recoveryTimings: 'preExitWait=5000,flush=500', recoveryFeedWindowMs: 50, hotSwitchNewPodTimeoutSeconds: 120, hotSwitchBackupPods: true,
      rescheduling: false, rescheduleBesideAscendPlugin: true, dryRun: true, leaderElect: true, leaderElectionNamespace: 'lease-ns', leaseDurationSeconds: 30,
      graceOverTimeSeconds: 1200, pendingEscalationSeconds: 120, rackEscalationMs: 2000, superPodEscalationMs: 5000, clusterInfoRefreshSeconds: 20, burstWindowMs: 500,
      decisionHistoryPerJob: 20, decisionHistoryMaxRecords: 900, decisionHistoryTtlHours: 48,
      clusterInfoRefreshAnnotation: true, nodeTaints: true, nodeTaintHoldSeconds: 30, refuseMalformedJobIdentity: false, devicePluginRules: true, trustPodNpuAnnotations: true, persistPolicyState: false,
      breakerWindowSeconds: 300, breakerDomainNodes: 4, breakerDomainChips: 16, breakerDomainJobs: 8, breakerClusterNodes: 80, breakerClusterChips: 320,
      breakerClusterJobs: 100, breakerAutoResetSeconds: 3600, breakerDomainLabel: 'example.com/rack', linkDownMemorySeconds: 60, relationFaultConfigDir: '/etc/clusterd-relation', flapDampingSeconds: 60, flapDampingRecoveries: 3, flapDampingWindowSeconds: 120,
      clusterSystemNamespace: `${ns}-cs`, pingmesh: false, pingmeshCheckIntervalMs: 1000, maxPublicFaults: 1000, publicFaultNamespaces: 'ascend-senders,mindx-dl', publicFaultUnknownNodes: true, outputLimits: false, maxSeriesPerMetric: 200, nodeName: 'node-a',
    };
    expect(Object.keys(want).sort()).toEqual(FLAG_LIST.map(([f]) => camel(f)).sort());
    expect(opts).toEqual(want);
    for (const [flag, spec] of FLAG_LIST) expect({ flag, differs: want[camel(flag)] !== spec.default }).toEqual({ flag, differs: true });

    // gRPC TLS: the Secret is a volume at the path the flags name.
    expect(pod.volumes).toContainEqual(expect.objectContaining({ name: 'grpc-tls', secret: expect.objectContaining({ secretName: 'clusterd-grpc-tls' }) }));
    expect(c.volumeMounts).toContainEqual(expect.objectContaining({ name: 'grpc-tls', mountPath: '/etc/clusterd-ts/tls' }));
    expect(c.ports.map((p) => p.containerPort)).toEqual([18899, 12253]);
    expect(c.image).toBe('registry.example.com/mindx/clusterd-ts:9.9.9');
    expect(pod.nodeSelector).toEqual({ masterselector: 'dls-master-node' });
    expect(pod.tolerations).toHaveLength(1);
    expect(pod.affinity).toHaveProperty('nodeAffinity');
    expect(pod.priorityClassName).toBe('system-cluster-critical');

    // Lease Role follows --leader-election-namespace, the leader-label Role stays with the pods; the
    // extra namespaces skip the release one.
    expect(named<RbacRole>(out, 'Role', `${FULL_ALL}-leader-election`).metadata.namespace).toBe('lease-ns');
    expect(named<RbacRole>(out, 'Role', `${FULL_ALL}-leader-label`).metadata.namespace).toBe(ns);
    for (const b of out.all('RoleBinding') as Binding[]) expect(b.subjects[0]!.namespace).toBe(ns);
    expect(out.all('Namespace').map((n) => [n.metadata.name, n.metadata.annotations?.['helm.sh/resource-policy']])).toEqual([[`${ns}-a`, 'keep'], [`${ns}-b`, 'keep'], [`${ns}-cs`, 'keep']]);

    // ServiceMonitor scrapes the metrics Service's http-metrics port (every replica), not the gRPC one.
    const sm = out.one<Doc & { spec: { selector: { matchLabels: Record<string, string> }; endpoints: Array<{ port: string; path: string; interval: string }> } }>('ServiceMonitor');
    const matches = (d: Doc): boolean => Object.entries(sm.spec.selector.matchLabels).every(([k, v]) => d.metadata.labels?.[k] === v);
    expect(out.all('Service').filter(matches).map((d) => d.metadata.name)).toEqual([`${FULL_ALL}-metrics`]);
    const svc = named<Service>(out, 'Service', `${FULL_ALL}-metrics`);
    expect(sm.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(sm.metadata.labels).toEqual(expect.objectContaining({ release: 'prometheus' }));
    expect(svc.spec.ports.map((p) => p.name)).toContain(sm.spec.endpoints[0]!.port);
    expect(sm.spec.endpoints[0]).toEqual(expect.objectContaining({ path: '/metrics', interval: '15s' }));

    // NetworkPolicy: the controller's pods, ingress only; gRPC from the configured peers, the http port
    // from the configured Prometheus only (namespace AND pod selector in one peer), nothing else.
    type Peer = { namespaceSelector?: unknown; podSelector?: unknown };
    const np = out.one<Doc & { spec: { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress: Array<{ ports: Array<{ protocol: string; port: number }>; from?: Peer[] }> } }>('NetworkPolicy');
    expect(np.metadata.namespace).toBe(ns);
    expect(np.spec.podSelector.matchLabels).toEqual(out.deployment.spec.selector.matchLabels);
    expect(np.spec.policyTypes).toEqual(['Ingress']);
    expect(np.spec.ingress).toEqual([
      { ports: [{ protocol: 'TCP', port: 18899 }], from: [{ namespaceSelector: { matchLabels: { 'ascend.training': 'true' } } }] },
      { ports: [{ protocol: 'TCP', port: 12253 }], from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'observability' } }, podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus', shard: '0' } } }] },
    ]);

    // The dashboard ConfigMap carries Grafana's sidecar label and valid JSON.
    const dash = out.one<Doc & { data: Record<string, string> }>('ConfigMap');
    expect(dash.metadata.labels).toEqual(expect.objectContaining({ grafana_dashboard: '1' }));
    expect(dash.metadata.annotations).toEqual({ grafana_folder: 'MindCluster' });
    expect(JSON.parse(dash.data['clusterd-ts.json']!)).toEqual(expect.objectContaining({ uid: 'clusterd-ts' }));
  });

  it('--dry-run posts no Events, and the flag help, docs/rbac.md, both READMEs and the dry-run ClusterRole say so', async () => {
    // The code side is ops-leader-routing.test.ts: a dry-run decision under this ClusterRole, no Event, no 403.
    const dry = await render('mindx-dl', ['--set', 'controller.dryRun=true']);
    expect(dry.one<RbacRole>('ClusterRole').rules.filter((r) => r.resources.includes('events'))).toEqual([]);
    expect(FLAGS['dry-run'].help).toContain('post Events for nothing');
    const rbacDoc = readFileSync(join(REPO, 'docs', 'rbac.md'), 'utf8');
    const eventsRow = rbacDoc.split('\n').find((l) => l.startsWith('| `""`, `events.k8s.io` | events |'));
    expect(eventsRow).toContain('Not with `controller.dryRun=true`');
    expect(rbacDoc).toContain('With `controller.dryRun=true` the ClusterRole keeps only the read verbs (no Events)');
    const chartReadme = readFileSync(join(CHART, 'README.md'), 'utf8').split('\n').find((l) => l.startsWith('| `controller.dryRun` |'));
    expect(chartReadme).toContain('drops every write verb, Events included');
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8').split('\n').find((l) => l.startsWith('| `controller.dryRun` |'));
    expect(readme).toContain('no Events');
  });

  it('ships a Grafana dashboard that charts every metric of telemetry/metrics.ts and no metric that does not exist', async () => {
    const text = readFileSync(join(CHART, 'dashboards', 'clusterd-ts.json'), 'utf8');
    const dashboard = JSON.parse(text) as { panels: Array<{ targets?: Array<{ expr: string }> }> };
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)).join('\n');
    const used = new Set([...exprs.matchAll(/\b(clusterd_[a-z0-9_]+)/g)].map((m) => m[1]!.replace(/_(bucket|sum|count)$/, '')));
    const own = (await new Metrics({ processMetrics: false }).registry.getMetricsAsJSON()).map((m) => m.name);
    const all = new Set((await new Metrics().registry.getMetricsAsJSON()).map((m) => m.name));
    expect(own.filter((m) => !used.has(m))).toEqual([]);
    expect([...used].filter((m) => !all.has(m))).toEqual([]);
  });
});

describe('image (Dockerfile) and chart agree', () => {
  it('pins the Node version of package.json, runs as uid 9000, exposes the flag ports, starts the bundle dist/main.mjs', () => {
    const docker = readFileSync(join(REPO, 'Dockerfile'), 'utf8');
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string; devDependencies: Record<string, string> };
    expect(docker).toContain(`ARG NODE_IMAGE=node:${pkg.devDependencies.node}-bookworm-slim`);
    expect(docker).toMatch(/^FROM \$\{NODE_IMAGE\} AS build$/m);
    expect(docker).toMatch(/^FROM \$\{NODE_IMAGE\} AS runtime$/m);
    expect(docker).toContain('tsc -p tsconfig.build.json --noEmit');
    expect(docker).toContain('node tools/bundle/build.ts dist-bundle');
    // The runtime takes the bundle built in the image unless BUNDLE_STAGE=prebuilt (make image).
    expect(docker).toMatch(/^ARG BUNDLE_STAGE=build$/m);
    expect(docker).toMatch(/^FROM \$\{BUNDLE_STAGE\} AS bundle$/m);
    expect(docker).toMatch(/^COPY --from=bundle \/src\/dist-bundle \.\/dist$/m);
    expect(docker).toMatch(/^USER 9000:9000$/m);
    expect(docker).toMatch(new RegExp(`^EXPOSE ${String(FLAGS['grpc-port'].default)} ${String(FLAGS['http-port'].default)}$`, 'm'));
    // --no-maglev: a V8 flag NODE_OPTIONS refuses (docs/benchmarks.md "Idle memory"); tools/bench reads it from here.
    expect(docker).toMatch(/^ENTRYPOINT \["node", "--no-maglev", "dist\/main\.mjs"\]$/m);
    const ignore = readFileSync(join(REPO, '.dockerignore'), 'utf8').split('\n');
    expect(ignore).toEqual(expect.arrayContaining(['node_modules', 'dist', '.git']));
    expect(readChartYaml().appVersion).toBe(pkg.version);
    expect(defaultValues.image).toEqual(expect.objectContaining({ repository: 'clusterd-ts', tag: '' }));
  });
});

// ---- on the real apiserver --------------------------------------------------------------------

type Access = readonly [allowed: boolean, verb: string, group: string, resource: string, namespace: string, subresource?: string, name?: string];

describe('helm chart charts/clusterd-ts on the real apiserver', () => {
  const admin = adminClient();
  const info = controlPlaneInfo();
  const ns = `clusterd-chart-${suffix}`;
  let installed: HelmRun | undefined;

  beforeAll(async () => {
    await ensureNamespace(admin, JOB_STATE_NAMESPACE); // the state Role lives there
    installed = await helm(['install', RELEASE, CHART, '-n', ns, '--create-namespace', '--kubeconfig', info.kubeconfig, '--timeout', '60s']);
  }, 90_000);

  it('accepts every manifest of the all-features rendering (server-side dry run, strict field validation)', async () => {
    const dryNs = await newNamespace(admin, 'chart-dry');
    const leaseNs = await newNamespace(admin, 'chart-lease');
    await ensureNamespace(admin, JOB_STATE_NAMESPACE);
    // --dry-run off here, so the write-side objects (the state Role in mindx-dl) are checked too.
    const out = await render(dryNs, ['-f', valuesFile(allFeatureValues(dryNs, leaseNs)), '--set', 'controller.dryRun=false'], `dry-${suffix}`);
    expect(out.all('Role').map((r) => r.metadata.namespace).sort()).toEqual([leaseNs, JOB_STATE_NAMESPACE, dryNs].sort());
    const checked: string[] = [];
    for (const d of out.docs) {
      if (d.kind === 'ServiceMonitor' || d.kind === 'PrometheusRule') continue; // no Prometheus Operator CRDs on the test control plane
      const res = await admin.request('POST', collectionPath(d), { body: d, query: { dryRun: 'All', fieldValidation: 'Strict' } }).then(() => 'ok', (e: unknown) => String(e));
      expect({ kind: d.kind, name: d.metadata.name, res }).toEqual({ kind: d.kind, name: d.metadata.name, res: 'ok' });
      checked.push(d.kind);
    }
    expect(checked).toHaveLength(out.docs.length - 2);
  }, 30_000);

  it('installs into a fresh namespace with helm install', async () => {
    expect({ code: installed?.code, stderr: installed?.stderr }).toEqual(expect.objectContaining({ code: 0 }));
    expect(installed?.stdout).toContain('STATUS: deployed');
    expect(installed?.stdout).toContain(`WARNING: the release namespace is ${ns}, not mindx-dl`);
    const dep = await admin.get<Deployment>(`/apis/apps/v1/namespaces/${ns}/deployments/${FULLNAME}`);
    expect(dep.spec.replicas).toBe(2);
    expect(dep.spec.template.spec.containers[0]!.args).toContain('--leader-elect=true');
    expect(dep.spec.template.spec.containers[0]!.args).toContain(`--leader-election-namespace=${ns}`);
    const svc = await admin.get<Service>(`/api/v1/namespaces/${ns}/services/clusterd-grpc-svc`);
    expect(svc.spec.ports.map((p) => p.port)).toEqual([8899]);
    expect(svc.spec.selector).toEqual({ ...dep.spec.selector.matchLabels, [LEADER_LABEL]: LEADER_LABEL_VALUE });
    const metricsSvc = await admin.get<Service>(`/api/v1/namespaces/${ns}/services/${FULLNAME}-metrics`);
    expect(metricsSvc.spec.ports.map((p) => p.port)).toEqual([11253]);
    expect(metricsSvc.spec.selector).toEqual(dep.spec.selector.matchLabels);
    await expect(admin.get(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles/${FULLNAME}-leader-label`)).resolves.toBeDefined();
    await expect(admin.get(`/api/v1/namespaces/${ns}/serviceaccounts/clusterd`)).resolves.toBeDefined();
    await expect(admin.get(`/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets/${FULLNAME}`)).resolves.toBeDefined();
    const cr = await admin.get<RbacRole>(`/apis/rbac.authorization.k8s.io/v1/clusterroles/${FULLNAME}`);
    expect(sortRules(cr.rules)).toEqual(sortRules(DEFAULT_RULES));
    const crb = await admin.get<Binding>(`/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${FULLNAME}`);
    expect(crb.subjects).toEqual([{ kind: 'ServiceAccount', name: 'clusterd', namespace: ns }]);
    await expect(admin.get(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles/${FULLNAME}-leader-election`)).resolves.toBeDefined();
    await expect(admin.get(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings/${FULLNAME}-leader-election`)).resolves.toBeDefined();
    await expect(admin.get(`/apis/rbac.authorization.k8s.io/v1/namespaces/${JOB_STATE_NAMESPACE}/roles/${FULLNAME}-state`)).resolves.toBeDefined();
    await expect(admin.get(`/apis/rbac.authorization.k8s.io/v1/namespaces/${JOB_STATE_NAMESPACE}/rolebindings/${FULLNAME}-state`)).resolves.toBeDefined();
  });

  const JOB_NS = 'some-job-namespace';
  const OTHER = 'kube-system';
  const RELEASE_NS = '<release>';
  const LEASE = LEADER_LEASE_NAME;
  const TABLE: readonly Access[] = [
    // what the controller does
    [true, 'list', '', 'pods', ''],
    [true, 'watch', '', 'pods', ''],
    [true, 'get', '', 'pods', JOB_NS],
    [true, 'patch', '', 'pods', JOB_NS],
    [true, 'delete', '', 'pods', JOB_NS],
    [true, 'list', '', 'nodes', ''],
    [true, 'watch', '', 'nodes', ''],
    [true, 'patch', '', 'nodes', ''],
    [true, 'list', 'scheduling.volcano.sh', 'podgroups', ''],
    [true, 'update', 'scheduling.volcano.sh', 'podgroups', JOB_NS],
    [true, 'patch', 'scheduling.volcano.sh', 'podgroups', JOB_NS],
    [true, 'watch', 'batch.volcano.sh', 'jobs', ''],
    [true, 'watch', 'mindxdl.gitee.com', 'ascendjobs', ''],
    [true, 'list', '', 'configmaps', ''],
    [true, 'watch', '', 'configmaps', ''],
    [true, 'create', '', 'configmaps', 'volcano-system'],
    [true, 'update', '', 'configmaps', 'volcano-system'],
    [true, 'create', '', 'configmaps', 'mindx-dl'],
    [true, 'update', '', 'configmaps', 'cluster-system'],
    [true, 'patch', '', 'configmaps', JOB_NS],
    [true, 'delete', '', 'configmaps', 'mindx-dl', undefined, 'clusterd-ts-recovery-0a1b'],
    [true, 'delete', '', 'configmaps', JOB_NS, undefined, 'job-summary-train'],
    [true, 'create', '', 'events', JOB_NS],
    [true, 'patch', '', 'events', JOB_NS],
    [true, 'create', 'events.k8s.io', 'events', JOB_NS],
    [true, 'create', 'clusterd-ts.io', 'decisionrecords', JOB_NS],
    [true, 'delete', 'clusterd-ts.io', 'decisionrecords', JOB_NS],
    [true, 'list', 'clusterd-ts.io', 'decisionrecords', ''],
    [true, 'create', 'coordination.k8s.io', 'leases', RELEASE_NS],
    [true, 'get', 'coordination.k8s.io', 'leases', RELEASE_NS, undefined, LEASE],
    [true, 'update', 'coordination.k8s.io', 'leases', RELEASE_NS, undefined, LEASE],
    [true, 'get', '', 'pods', RELEASE_NS],
    [true, 'list', '', 'pods', RELEASE_NS],
    [true, 'patch', '', 'pods', RELEASE_NS],
    // and nothing more
    [false, 'get', '', 'secrets', RELEASE_NS],
    [false, 'list', '', 'secrets', ''],
    [false, 'get', '', 'secrets', OTHER],
    [false, 'delete', '', 'nodes', ''],
    [false, 'update', '', 'nodes', ''],
    [false, 'patch', '', 'nodes', '', 'status'],
    [false, 'create', '', 'pods', JOB_NS],
    [false, 'update', '', 'pods', JOB_NS, 'status'],
    [false, 'create', '', 'pods', JOB_NS, 'eviction'],
    [false, 'delete', 'scheduling.volcano.sh', 'podgroups', JOB_NS],
    [false, 'update', 'batch.volcano.sh', 'jobs', JOB_NS],
    [false, 'delete', 'batch.volcano.sh', 'jobs', JOB_NS],
    [false, 'update', 'mindxdl.gitee.com', 'ascendjobs', JOB_NS],
    [false, 'update', 'clusterd-ts.io', 'decisionrecords', JOB_NS],
    [false, 'get', '', 'services', RELEASE_NS],
    [false, 'update', 'coordination.k8s.io', 'leases', RELEASE_NS, undefined, 'kube-controller-manager'],
    [false, 'get', 'coordination.k8s.io', 'leases', RELEASE_NS, undefined, 'some-other-lease'],
    [false, 'update', 'coordination.k8s.io', 'leases', OTHER, undefined, LEASE],
    [false, 'create', 'coordination.k8s.io', 'leases', OTHER],
    [false, 'list', 'coordination.k8s.io', 'leases', ''],
    [false, 'delete', 'coordination.k8s.io', 'leases', RELEASE_NS, undefined, LEASE],
    [false, 'create', 'rbac.authorization.k8s.io', 'clusterroles', ''],
    [false, 'create', 'rbac.authorization.k8s.io', 'rolebindings', RELEASE_NS],
    [false, 'create', '', 'serviceaccounts', RELEASE_NS, 'token'],
  ];

  it.each(TABLE.map((row) => [describeAccess(row), row] as const))('SubjectAccessReview: %s', async (_name, row) => {
    const [allowed, verb, group, resource, namespace, subresource, name] = row;
    const review = await admin.create<KubeObject & { status?: { allowed: boolean } }>('/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview',
      spec: {
        user: `system:serviceaccount:${ns}:clusterd`,
        groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'],
        resourceAttributes: { verb, group, resource, subresource, name, namespace: namespace === RELEASE_NS ? ns : namespace },
      },
    });
    expect(review.status?.allowed ?? false).toBe(allowed);
  });

  it('the ServiceAccount\'s own token: lists pods, may not read Secrets or delete Nodes', async () => {
    const sa = await serviceAccountClient(admin, ns, 'clusterd');
    await expect(sa.list(paths.pods())).resolves.toEqual(expect.objectContaining({ items: expect.any(Array) }));
    await expect(sa.list(paths.nodes())).resolves.toEqual(expect.objectContaining({ items: expect.any(Array) }));
    expect(await status(sa.list(`/api/v1/namespaces/${ns}/secrets`))).toBe(403);
    expect(await status(sa.delete(paths.node(`no-such-node-${suffix}`)))).toBe(403);
    expect(await status(sa.create(paths.pods(ns), { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' } }))).toBe(403);
    // Allowed verbs on objects that do not exist answer 404, not 403.
    expect(await status(sa.patch(paths.node(`no-such-node-${suffix}`), { metadata: { labels: { a: 'b' } } }))).toBe(404);
  });

  it('runs every informer of the controller under the chart\'s ServiceAccount until all are synced', async () => {
    const sa = await serviceAccountClient(admin, ns, 'clusterd');
    // The Manager's sources, not the Manager: a full controller here would act on other tests' jobs.
    const sources = createSources(sa, { log: silentLogger, clock: realClock, clusterSystemNamespace: String(FLAGS['cluster-system-namespace'].default) });
    startSources(sources);
    try {
      await waitForSync(sources, 30_000).catch((e: unknown) => {
        throw new Error(`${String(e)}; not synced: ${sourcesHealth(sources).filter((h) => !h.synced).map((h) => h.name).join(', ')}`);
      });
      expect(sourcesHealth(sources).filter((h) => !h.synced)).toEqual([]);
    } finally {
      stopSources(sources);
    }
  }, 60_000);

  it('wins, renews and releases the leader Lease under the chart\'s ServiceAccount', async () => {
    const sa = await serviceAccountClient(admin, ns, 'clusterd');
    let started = 0;
    const elector = new LeaderElector(sa, {
      namespace: ns, name: LEADER_LEASE_NAME, identity: `chart-test-${suffix}`,
      leaseDurationMs: 5_000, renewDeadlineMs: 3_000, retryPeriodMs: 500, clock: realClock,
      onStartedLeading: () => { started += 1; }, onStoppedLeading: () => undefined,
    });
    elector.start();
    try {
      await eventually(() => elector.isLeader, 10_000);
      const lease = await admin.get<KubeObject & { spec: { holderIdentity: string; renewTime: string } }>(paths.lease(ns, LEADER_LEASE_NAME));
      expect(lease.spec.holderIdentity).toBe(`chart-test-${suffix}`);
      await eventually(async () => (await admin.get<typeof lease>(paths.lease(ns, LEADER_LEASE_NAME))).spec.renewTime !== lease.spec.renewTime, 10_000);
      expect(started).toBe(1);
    } finally {
      await elector.stop();
    }
  }, 30_000);

  it('helm uninstall removes the cluster-scoped objects', async () => {
    const r = await helm(['uninstall', RELEASE, '-n', ns, '--kubeconfig', info.kubeconfig, '--timeout', '60s']);
    expect({ code: r.code, stderr: r.stderr }).toEqual(expect.objectContaining({ code: 0 }));
    expect(await status(admin.get(`/apis/rbac.authorization.k8s.io/v1/clusterroles/${FULLNAME}`))).toBe(404);
    expect(await status(admin.get(`/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${FULLNAME}`))).toBe(404);
    expect(await status(admin.get(`/apis/rbac.authorization.k8s.io/v1/namespaces/${JOB_STATE_NAMESPACE}/roles/${FULLNAME}-state`))).toBe(404);
  }, 90_000);
});

// ---- helpers ----------------------------------------------------------------------------------

function readChartYaml(): { appVersion: string; version: string } {
  return parseYaml(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as { appVersion: string; version: string };
}

function sortRules(rules: Rule[]): string[] {
  return rules.map((r) => `${r.apiGroups.join(',')} ${r.resources.join(',')}: ${[...r.verbs].sort().join(',')}`).sort();
}

function describeAccess([allowed, verb, group, resource, namespace, sub, name]: Access): string {
  const what = `${group === '' ? '' : `${group}/`}${resource}${sub === undefined ? '' : `/${sub}`}${name === undefined ? '' : ` ${name}`}`;
  return `${allowed ? 'allowed' : 'denied '} ${verb} ${what} ${namespace === '' ? '(all namespaces)' : `in ${namespace}`}`;
}

function named<T extends Doc>(r: Rendered, kind: string, name: string): T {
  const d = r.all(kind).find((x) => x.metadata.name === name);
  if (d === undefined) throw new Error(`no ${kind} ${name}; have ${r.all(kind).map((x) => x.metadata.name).join(', ')}`);
  return d as T;
}

async function status(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (e) {
    if (e instanceof ApiError) return e.statusCode;
    throw e;
  }
}

/** POST path for a rendered object (the kinds this chart renders). */
function collectionPath(d: Doc): string {
  const ns = d.metadata.namespace;
  const table: Record<string, string> = {
    Namespace: '/api/v1/namespaces',
    ClusterRole: '/apis/rbac.authorization.k8s.io/v1/clusterroles',
    ClusterRoleBinding: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
    ServiceAccount: `/api/v1/namespaces/${ns}/serviceaccounts`,
    Service: `/api/v1/namespaces/${ns}/services`,
    ConfigMap: `/api/v1/namespaces/${ns}/configmaps`,
    Role: `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`,
    RoleBinding: `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`,
    Deployment: `/apis/apps/v1/namespaces/${ns}/deployments`,
    PodDisruptionBudget: `/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets`,
    NetworkPolicy: `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`,
  };
  const p = table[d.kind];
  if (p === undefined) throw new Error(`no REST path for kind ${d.kind}`);
  return p;
}

