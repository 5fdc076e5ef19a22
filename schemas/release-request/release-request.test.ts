import {
  appendReleaseRequest, parseReleaseRequests, rawReleaseRequests, RELEASE_REQUESTS_DROPPED_KEY, RELEASE_REQUESTS_KEY, RELEASE_REQUESTS_MAX, RELEASE_REQUESTS_MAX_CHARS,
  RELEASE_REQUEST_MAX_NPUS, type ReleaseRequest,
} from './release-request.ts';

const one: ReleaseRequest = { node: 'n1', npus: ['Ascend910-1'], by: 'alice', at: '2026-01-02T03:04:05.000Z' };
const raw = (data: Record<string, string>): unknown[] => { const r = rawReleaseRequests(data); if (!r.ok) throw new Error(r.reason); return [...r.value]; };

describe('release requests', () => {
  it('round-trips, skips malformed entries, keeps the newest RELEASE_REQUESTS_MAX with a count of the dropped', () => {
    const { data } = appendReleaseRequest(undefined, [], one);
    const p = parseReleaseRequests(data);
    expect(p.ok && p.value.requests).toEqual([{ ...one, atMs: Date.parse(one.at) }]);
    const mixed = parseReleaseRequests({ requests: JSON.stringify([one, { node: 'n2' }, 'x']) });
    expect(mixed.ok && mixed.value.requests.length).toBe(1);
    expect(mixed.ok && mixed.value.skipped.length).toBe(2);
    expect(parseReleaseRequests({ requests: '{' }).ok).toBe(false);
    expect(parseReleaseRequests(undefined)).toEqual({ ok: true, value: { requests: [], skipped: [] } });
    let d: Record<string, string> | undefined;
    for (let i = 0; i < RELEASE_REQUESTS_MAX + 5; i++) d = appendReleaseRequest(d, d === undefined ? [] : raw(d), { ...one, by: `u${i}` }).data;
    const many = parseReleaseRequests(d);
    expect(many.ok && many.value.requests).toHaveLength(RELEASE_REQUESTS_MAX);
    expect(many.ok && many.value.requests.at(-1)?.by).toBe(`u${RELEASE_REQUESTS_MAX + 4}`);
    expect(d![RELEASE_REQUESTS_DROPPED_KEY]).toBe('5');
  });

  it('an entry past a bound (40,000 NPUs, a path in the node name) is skipped, the others are read; appends keep it verbatim within the size bound', () => {
    const huge = { node: 'node-000', npus: Array.from({ length: 40_000 }, (_, i) => `Ascend910-${i}`), by: 'bob', at: '2026-01-02T03:04:06.000Z' };
    const evil = { ...one, node: 'node-000/../../../mindx-dl/configmaps/rt-target' };
    const text = JSON.stringify([huge, one, evil]);
    expect(text.length).toBeGreaterThan(RELEASE_REQUESTS_MAX_CHARS);
    const p = parseReleaseRequests({ [RELEASE_REQUESTS_KEY]: text });
    expect(p.ok && p.value.requests.map((r) => r.by)).toEqual(['alice']);
    expect(p.ok && p.value.skipped).toEqual([`entry 0: 40000 NPUs > ${RELEASE_REQUEST_MAX_NPUS}`, expect.stringContaining('entry 2: node "node-000/../')]);
    // The next release appends: the audit list keeps every entry that fits, the evil one verbatim; the huge one, oldest, does not fit.
    const next = appendReleaseRequest({ [RELEASE_REQUESTS_KEY]: text }, raw({ [RELEASE_REQUESTS_KEY]: text }), { ...one, by: 'carol' });
    expect(next.data[RELEASE_REQUESTS_KEY]!.length).toBeLessThanOrEqual(RELEASE_REQUESTS_MAX_CHARS);
    expect(raw(next.data)).toEqual([one, evil, { ...one, by: 'carol' }]);
    expect(next.dropped).toBe(1);
    expect(next.data[RELEASE_REQUESTS_DROPPED_KEY]).toBe('1');
  });
});
