/**
 * Random cluster-info entries for tests that compare two encodings of the same view (the full
 * render against the reconciler's per-node cache). Seeded, so a failure can be replayed. Strings mix
 * ASCII, characters Go escapes (`<`, `&`, `"`), 2-, 3- and 4-byte UTF-8, so byte sizes and Go key
 * order differ from UTF-16 length and order.
 */
import { prng } from '../../tools/prng.ts';
import type { DeviceInfoEntry, NodeInfoEntry, SwitchInfoEntry } from '../../schemas/cluster-info/cluster-info.ts';


const ALPHABET = ['a', 'b', 'z', '0', '9', '-', '.', '<', '&', '"', 'é', 'ß', '中', '\uFF21', '\u{1D11E}', '\u{1F600}'];

export class RandomEntries {
  readonly rand: () => number;
  constructor(seed: number) { this.rand = prng(seed); }

  int(n: number): number { return Math.floor(this.rand() * n); }
  pick<T>(xs: readonly T[]): T { return xs[this.int(xs.length)]!; }
  text(max: number): string {
    let s = '';
    for (let i = this.int(max + 1); i > 0; i--) s += this.pick(ALPHABET);
    return s;
  }
  /** Node names: mostly ordinary, some with characters whose UTF-16 and UTF-8 orders differ. */
  nodeName(): string {
    return this.rand() < 0.7 ? `node-${this.int(100_000)}` : `n-${this.text(6)}`;
  }

  device(node: string, pad: number): DeviceInfoEntry {
    const P = 'huawei.com/Ascend910';
    return {
      DeviceList: {
        [P]: Array.from({ length: this.int(16) }, (_, i) => `Ascend910-${i}`).join(','),
        [`${P}-Fault`]: this.rand() < 0.5 ? '[]' : `[{"fault_code":"${this.text(pad)}"}]`,
        [`${P}-NetworkUnhealthy`]: '', [`${P}-Recovering`]: '', [`${P}-Unhealthy`]: this.text(4),
      },
      UpdateTime: 1_732_182_160 + this.int(1000), CmName: `mindx-dl-deviceinfo-${node}`,
      SuperPodID: this.int(3) - 1, RackID: this.int(4), ServerIndex: this.int(3) - 1,
    };
  }

  switch(node: string): SwitchInfoEntry {
    return {
      FaultCode: this.rand() < 0.2 ? null : [this.text(10)], FaultLevel: this.pick(['Separate', 'SubHealthFault', 'NotHandle']),
      UpdateTime: 1_732_182_160, NodeStatus: this.pick(['UnHealthy', 'SubHealthy', 'Healthy']),
      FaultTimeAndLevelMap: this.rand() < 0.2 ? null : { [`${this.text(5)}_0_${this.int(8)}`]: { fault_time: 1_732_182_000_500 + this.int(100), fault_level: 'Separate' } },
      CmName: `mindx-dl-switchinfo-${node}`,
    };
  }

  nodeInfo(node: string): NodeInfoEntry {
    return {
      FaultDevList: this.rand() < 0.2 ? null : [{ DeviceType: 'CPU', DeviceId: this.int(4), FaultCode: [this.text(8)], FaultLevel: 'SeparateFault' }],
      NodeStatus: this.pick(['UnHealthy', 'PreSeparate', 'Healthy']), CmName: `mindx-dl-nodeinfo-${node}`, UpdateTime: 1_732_182_160_000 + this.int(1000),
    };
  }
}
