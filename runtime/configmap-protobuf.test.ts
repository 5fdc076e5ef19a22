import { encodeConfigMap } from './configmap-protobuf.ts';
import type { ConfigMap } from './kube-objects.ts';

const base: ConfigMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'mindx-dl', resourceVersion: '7', labels: { x: 'y' } }, data: { k: 'v' } };

describe('encodeConfigMap', () => {
  it('encodes a ConfigMap our writes produce, behind the protobuf magic, with its strings as they are', () => {
    const b = encodeConfigMap({ ...base, data: { k: 'say "hi"' } })!;
    expect(b.subarray(0, 4)).toEqual(Buffer.from('k8s\0', 'latin1'));
    expect(b.includes(Buffer.from('say "hi"'))).toBe(true);
    expect(b.includes(Buffer.from('mindx-dl'))).toBe(true);
  });

  it('declines (the caller sends JSON) any object with a field it does not cover, so none is dropped', () => {
    const cases: ConfigMap[] = [
      { ...base, metadata: { ...base.metadata, deletionTimestamp: '2026-11-26T00:00:00Z' } },
      { ...base, metadata: { ...base.metadata, managedFields: [] } },
      { ...base, binaryData: { b: 'AA==' } },
      { ...base, data: { k: 1 as unknown as string } },
      { ...base, metadata: { ...base.metadata, ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'n', uid: 'u', extra: 1 } as never] } },
      { ...base, metadata: { ...base.metadata, generation: 1.5 } },
    ];
    for (const c of cases) expect(encodeConfigMap(c)).toBeUndefined();
  });

  it('leaves the cache-only digest out', () => {
    expect(encodeConfigMap({ ...base, dataDigest: 'abc' })).toEqual(encodeConfigMap(base));
  });
});
