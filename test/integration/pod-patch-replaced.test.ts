/**
 * Pod writes that carry the pod's uid as a precondition (docs/rules.md#resched.external, the
 * hot-switch and recovery markers) must find a pod replaced under the same name "gone", not fail
 * and be retried: on a merge patch the real apiserver refuses the other uid with 422 Invalid, where
 * a PUT or a DELETE precondition answers 409.
 */
import { paths, type KubeObject } from '../../runtime/kube-client.ts';
import { annotatePodStatus } from '../../actions/pod-annotation.action.ts';
import { patchPodMeta } from '../../actions/recovery-patch.action.ts';
import { adminClient, newNamespace } from '../support/cluster.ts';

describe('uid-guarded pod patches on a replaced pod', () => {
  const client = adminClient();

  it('answer gone and leave the new pod untouched', async () => {
    const ns = await newNamespace(client, 'replaced');
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'w-0', namespace: ns }, spec: { containers: [{ name: 'c', image: 'busybox' }] } };
    const old = await client.create<KubeObject>(paths.pods(ns), pod);
    await client.delete(paths.pod(ns, 'w-0'), { gracePeriodSeconds: 0, preconditions: { uid: old.metadata?.uid } });
    const fresh = await client.create<KubeObject>(paths.pods(ns), pod);
    const ref = { name: 'w-0', uid: old.metadata!.uid! };

    await expect(annotatePodStatus(client, ns, ref, 'Unhealthy-1')).resolves.toBe('gone');
    await expect(patchPodMeta({ client }, ns, ref, { labels: { 'fault-type': 'SubHealth' } })).resolves.toBe('gone');
    const after = await client.get<KubeObject>(paths.pod(ns, 'w-0'));
    expect(after.metadata?.uid).toBe(fresh.metadata?.uid);
    expect(after.metadata?.annotations?.['huawei.com/pod-status']).toBeUndefined();
    expect(after.metadata?.labels?.['fault-type']).toBeUndefined();
    // The pod it names is still patched.
    await expect(annotatePodStatus(client, ns, { name: 'w-0', uid: fresh.metadata!.uid! }, 'Unhealthy-1')).resolves.toBe('annotated');
  }, 30_000);
});
