import { appendReleaseRequest, parseReleaseRequests, RELEASE_REQUESTS_MAX, type ReleaseRequest } from './release-request.ts';

describe('release requests', () => {
  it('round-trips, skips malformed entries, keeps the newest RELEASE_REQUESTS_MAX', () => {
    const one = { node: 'n1', npus: ['Ascend910-1'], by: 'alice', at: '2026-01-02T03:04:05.000Z' };
    const text = appendReleaseRequest([], one);
    const p = parseReleaseRequests({ requests: text });
    expect(p.ok && p.value.requests).toEqual([{ ...one, atMs: Date.parse(one.at) }]);
    const mixed = parseReleaseRequests({ requests: JSON.stringify([one, { node: 'n2' }, 'x']) });
    expect(mixed.ok && mixed.value.requests.length).toBe(1);
    expect(mixed.ok && mixed.value.skipped.length).toBe(2);
    expect(parseReleaseRequests({ requests: '{' }).ok).toBe(false);
    expect(parseReleaseRequests(undefined)).toEqual({ ok: true, value: { requests: [], skipped: [] } });
    let many: ReleaseRequest[] = [];
    for (let i = 0; i < RELEASE_REQUESTS_MAX + 5; i++) {
      const r = parseReleaseRequests({ requests: appendReleaseRequest(many, { ...one, by: `u${i}` }) });
      many = r.ok ? [...r.value.requests] : many;
    }
    expect(many).toHaveLength(RELEASE_REQUESTS_MAX);
    expect(many.at(-1)?.by).toBe(`u${RELEASE_REQUESTS_MAX + 4}`);
  });
});
