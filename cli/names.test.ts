import { checkNamespace, checkNodeName } from './names.ts';
import { paths } from '../runtime/kube-client.ts';
import { CliError, EXIT } from './errors.ts';

const code = (f: () => unknown): number | undefined => { try { f(); return undefined; } catch (e) { return (e as CliError).code; } };

describe('names from the command line', () => {
  it('node names: DNS-1123 subdomains only (no path, no query, no upper case, at most 253)', () => {
    expect(checkNodeName('node-000')).toBe('node-000');
    expect(checkNodeName('worker-1.rack-3.example')).toBe('worker-1.rack-3.example');
    for (const bad of ['node-000/../../../mindx-dl/configmaps/rt-target', '..', 'Node-1', 'n?x=1', 'n%2F', '', '-n', `${'a'.repeat(254)}`]) {
      expect({ bad, code: code(() => checkNodeName(bad)) }).toEqual({ bad, code: EXIT.usage });
    }
  });

  it('namespaces: DNS-1123 labels', () => {
    expect(checkNamespace('--x', 'cluster-system')).toBe('cluster-system');
    expect(code(() => checkNamespace('--x', 'a/b'))).toBe(EXIT.usage);
    expect(code(() => checkNamespace('--x', 'a.b'))).toBe(EXIT.usage);
  });

  it('every name is one encoded path segment (what the runtime sends, whatever a caller passes)', () => {
    expect(paths.configMap('kube-system', 'mindx-dl-deviceinfo-node-000/../../../mindx-dl/configmaps/rt-target'))
      .toBe('/api/v1/namespaces/kube-system/configmaps/mindx-dl-deviceinfo-node-000%2F..%2F..%2F..%2Fmindx-dl%2Fconfigmaps%2Frt-target');
    expect(paths.node('a?watch=1')).toBe('/api/v1/nodes/a%3Fwatch%3D1');
    expect(paths.configMap('mindx-dl', 'cluster-info-node-cm')).toBe('/api/v1/namespaces/mindx-dl/configmaps/cluster-info-node-cm');
  });
});
