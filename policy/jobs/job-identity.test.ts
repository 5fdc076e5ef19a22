import { pickClaimant, verifyJobIdentity, type OwnerClaim } from './job-identity.ts';

const claim: OwnerClaim = { kind: 'vcjob', name: 'llama', uid: 'u1' };
const pg = { namespace: 'team-a', name: 'llama-u1' };

describe('job identity', () => {
  it('is the owner that exists in the PodGroup\'s namespace with the claimed name and UID', () => {
    expect(verifyJobIdentity(pg, claim, { namespace: 'team-a', name: 'llama', uid: 'u1' }))
      .toEqual({ ok: true, identity: { namespace: 'team-a', name: 'llama', uid: 'u1', kind: 'vcjob' } });
  });

  it('refuses a claim whose owner does not exist, has another UID, or lives in another namespace or under another name', () => {
    const tenant = { namespace: 'tenant', name: 'llama-u1' };
    expect(verifyJobIdentity(tenant, claim, undefined)).toMatchObject({ ok: false, reason: 'owner_not_found' });
    expect(verifyJobIdentity(tenant, claim, undefined, { namespace: 'team-a', name: 'llama', uid: 'u1' }))
      .toMatchObject({ ok: false, reason: 'owner_other_namespace', detail: 'tenant/llama-u1 claims Volcano Job tenant/llama uid u1, but that UID is team-a/llama\'s' });
    expect(verifyJobIdentity(pg, { ...claim, name: 'other' }, undefined, { namespace: 'team-a', name: 'llama', uid: 'u1' })).toMatchObject({ ok: false, reason: 'owner_other_name' });
    expect(verifyJobIdentity(pg, claim, { namespace: 'team-a', name: 'llama', uid: 'u2' })).toMatchObject({ ok: false, reason: 'owner_uid_mismatch' });
  });

  it('picks the PodGroup named <job>-<uid> of several verified claimants, else the first key', () => {
    const id = { namespace: 'team-a', name: 'llama', uid: 'u1' };
    expect(pickClaimant(['team-a/aaa', 'team-a/llama-u1'], id)).toBe('team-a/llama-u1');
    expect(pickClaimant(['team-a/b', 'team-a/a'], id)).toBe('team-a/a');
  });
});
