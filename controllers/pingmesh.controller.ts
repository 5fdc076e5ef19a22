/**
 * Pingmesh's intake (docs/rules.md#pingmesh.super-pod-devices, #pingmesh.config): Node events fill
 * the super pods (state/super-pod-devices.ts) and `pingmesh-config` switches detection, as ClusterD's
 * collectors do (component/clusterd/pkg/application/pingmesh/collector.go, config_collector.go).
 * Every change asks for a pass of the super-pod reconciler (`onChange`); bad input is logged, counted
 * in clusterd_invalid_input_total and changes nothing.
 */
import type { Subscription } from 'rxjs';
import type { WatchEvent } from '../runtime/reflector.ts';
import type { ConfigMap, Node } from '../runtime/kube-objects.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { kindOf } from '../schemas/parsed.ts';
import { decodePingMeshConfig, parsePingMeshConfig, PINGMESH_CONFIG_CM_NAME, PINGMESH_CONFIG_LABEL } from '../schemas/pingmesh/pingmesh-config.ts';
import { ACCELERATOR_TYPE_LABEL, NODE_DEVICE_ANNOTATIONS, readPingMeshNode } from '../schemas/pingmesh/super-pod-device.ts';
import type { SuperPodDevices } from '../state/super-pod-devices.ts';
import type { Sources } from './sources/sources.ts';

export interface PingMeshControllerDeps {
  readonly sources: Pick<Sources, 'nodes' | 'clusterSystemConfigMaps'>;
  readonly state: SuperPodDevices;
  /** Namespace of pingmesh-config (ClusterD: cluster-system). */
  readonly namespace: string;
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly onChange: () => void;
}

const labelled = (cm: ConfigMap): boolean => cm.metadata?.labels?.[PINGMESH_CONFIG_LABEL.key] === PINGMESH_CONFIG_LABEL.value;

const FORMAT = { node: 'pingmesh_node', config: 'pingmesh-config' } as const;

/** The annotations and label pingmesh reads, to log a bad node once per change and not per heartbeat. */
const pingmeshFacts = (n: Node): string => {
  const a = n.metadata?.annotations ?? {};
  return JSON.stringify([...Object.values(NODE_DEVICE_ANNOTATIONS).map((k) => a[k]), n.metadata?.labels?.[ACCELERATOR_TYPE_LABEL]]);
};

export class PingMeshController {
  private readonly d: PingMeshControllerDeps;
  private subs: Subscription[] = [];

  constructor(d: PingMeshControllerDeps) {
    this.d = d;
  }

  start(): void {
    this.subs = [
      this.d.sources.nodes.events$.subscribe((ev) => this.onNode(ev)),
      this.d.sources.clusterSystemConfigMaps.events$.subscribe((ev) => this.onConfigMap(ev)),
    ];
  }

  stop(): void {
    for (const s of this.subs) s.unsubscribe();
    this.subs = [];
  }

  private onNode(ev: WatchEvent<Node>): void {
    const name = ev.obj.metadata?.name ?? '';
    const reading = readPingMeshNode(name, ev.obj.metadata?.annotations, ev.obj.metadata?.labels);
    if (reading.kind === 'none') return;
    if (reading.kind === 'bad') {
      // ClusterD drops the event; the node keeps what was saved for it. Reported when its facts change
      // (a delete reports nothing new).
      if (ev.type === 'delete' || (ev.type === 'update' && pingmeshFacts(ev.old) === pingmeshFacts(ev.obj))) return;
      this.d.log.warn('input rejected; last good state kept', { rule: 'pingmesh.super-pod-devices', format: FORMAT.node, node: name, event: ev.type, reason: reading.rejection.reason, kind: kindOf(reading.rejection) });
      this.d.metrics.invalidInput.inc({ format: FORMAT.node, reason: kindOf(reading.rejection) });
      return;
    }
    const node = reading.node;
    if (ev.type === 'delete') {
      this.d.state.remove(node.superPodId, name);
    } else {
      const refused = this.d.state.save(node);
      if (refused !== undefined && (ev.type === 'add' || pingmeshFacts(ev.old) !== pingmeshFacts(ev.obj))) {
        this.d.log.warn('pingmesh: node not added to its super pod', { rule: 'pingmesh.super-pod-devices', node: name, superPodId: node.superPodId, serverType: node.serverType, reason: refused });
        this.d.metrics.invalidInput.inc({ format: FORMAT.node, reason: 'invalid' });
      }
    }
    this.d.onChange();
  }

  private onConfigMap(ev: WatchEvent<ConfigMap>): void {
    const m = ev.obj.metadata;
    if (m?.name !== PINGMESH_CONFIG_CM_NAME || m.namespace !== this.d.namespace) return;
    const log = this.d.log.child({ rule: 'pingmesh.config', configMap: `${this.d.namespace}/${PINGMESH_CONFIG_CM_NAME}` });
    // Unlabelled, ClusterD's informer does not see it: losing the label is a delete to it.
    if (ev.type === 'delete' || !labelled(ev.obj)) {
      if (ev.type === 'delete' ? labelled(ev.obj) : ev.type === 'update' && labelled(ev.old)) log.info('pingmesh-config gone or unlabelled: detection keeps its state', { detect: this.d.state.detect });
      return;
    }
    // ClusterD decodes the old object first and drops the update when it does not decode
    // (component/clusterd/pkg/interface/kube/informer.go cmPingMeshConfigHandler): the edit after an
    // undecodable pingmesh-config is not taken, the next one is.
    if (ev.type === 'update' && labelled(ev.old)) {
      const old = decodePingMeshConfig(ev.old.data);
      if (!old.ok) {
        log.warn('input rejected; last good state kept', { format: FORMAT.config, reason: `the previous pingmesh-config did not decode (${old.reason}); ClusterD takes no edit after one: edit it again`, kind: 'invalid', detect: this.d.state.detect });
        this.d.metrics.invalidInput.inc({ format: FORMAT.config, reason: 'invalid' });
        return;
      }
    }
    const parsed = parsePingMeshConfig(ev.obj.data);
    if (!parsed.ok) {
      log.warn('input rejected; last good state kept', { format: FORMAT.config, reason: parsed.reason, kind: kindOf(parsed), detect: this.d.state.detect });
      this.d.metrics.invalidInput.inc({ format: FORMAT.config, reason: kindOf(parsed) });
      return;
    }
    if (this.d.state.setDetect(parsed.value.detect)) {
      log.info(parsed.value.detect ? 'pingmesh detection on' : 'pingmesh detection off: super-pod ConfigMaps are kept as they are', { items: parsed.value.items.size });
      this.d.onChange();
    }
  }
}
