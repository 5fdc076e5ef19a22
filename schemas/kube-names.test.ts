import { isConfigMapKey, isDnsSubdomain, isJobUid, jobIdentityProblem } from './kube-names.ts';

describe('kube names: what the apiserver accepts as a data key or a name', () => {
  it('a UID the apiserver assigns is a job uid; what an ownerReference may carry unvalidated is not', () => {
    expect(isJobUid('6f1c2b9e-0d4a-4c55-9a51-3c1e7f0a0001')).toBe(true);
    for (const bad of ['bad uid !', '', 'UPPER', 'a/b', 'x'.repeat(64), '-a', 'a-', '..', 'a.b']) expect(isJobUid(bad)).toBe(false);
  });

  it('data keys and subdomains as apimachinery validates them', () => {
    expect(isConfigMapKey('state.json')).toBe(true);
    expect(isConfigMapKey('bad uid !')).toBe(false);
    expect(isConfigMapKey('..')).toBe(false);
    expect(isConfigMapKey('k'.repeat(254))).toBe(false);
    expect(isDnsSubdomain('reset-config-llama.v2')).toBe(true);
    expect(isDnsSubdomain('reset-config-Llama')).toBe(false);
    expect(isDnsSubdomain(`a${'.b'.repeat(127)}`)).toBe(false);
  });

  it('names the part of a job identity that cannot be used, uid first', () => {
    expect(jobIdentityProblem({ uid: 'u-1', name: 'llama' })).toBeUndefined();
    expect(jobIdentityProblem({ uid: 'bad uid !', name: 'llama' })?.kind).toBe('uid');
    expect(jobIdentityProblem({ uid: 'u-1', name: 'Bad Name' })?.kind).toBe('name');
    expect(jobIdentityProblem({ uid: 'u-1', name: '' })?.kind).toBe('name');
    expect(jobIdentityProblem({ uid: 'u-1', name: 'x'.repeat(241) })?.kind).toBe('name'); // reset-config-<name> over 253
  });
});
