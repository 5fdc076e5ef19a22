/**
 * The builder's runtime behaviour (the graph rules are tools/layering's): events reach their
 * watchers only once subscribed, in flow order, the process's watch last; a spec gets the ports it
 * declared from providers built before it; a declared port left unprovided or an event mapped to
 * nothing is a build error.
 */
import { buildFlows, BuildError, specKit } from './wiring.ts';

interface Calls { readonly count: { value(): number } }
interface Events { readonly tick: number; readonly done: void }
const spec = specKit<{ readonly log: string[] }, Calls, Events>();
const kinds = { count: 'read' } as const;

const counter = spec({
  name: 'counter', layer: 'state', consumes: [], provides: ['count'], emits: ['tick'], watches: [],
  build: (_use, { tick }, x) => {
    let n = 0;
    return {
      out: () => { n++; x.log.push(`counter emits ${n}`); tick(n); },
      provide: { count: { value: () => n } },
      on: {},
    };
  },
});
const watcher = (name: string) => spec({
  name, layer: 'controller', consumes: ['count'], provides: [], emits: ['done'], watches: ['tick'],
  build: ({ count }, { done }, x) => ({
    out: undefined,
    provide: {},
    on: { tick: (v) => { x.log.push(`${name} sees ${v} (count ${count.value()})`); done(); } },
    flow: { start: () => x.log.push(`${name} starts`) },
  }),
});

describe('buildFlows', () => {
  it('delivers events only after subscribe, in flow order with the process last, and none after unsubscribe', () => {
    const log: string[] = [];
    const b = buildFlows([watcher('first'), counter, watcher('second')], kinds, { log });
    const fire = b.outs.get('counter') as () => void;
    b.watch('process', 'done', () => log.push('process sees done'));
    fire();
    b.subscribe();
    for (const f of b.flows) f.start?.();
    fire();
    b.unsubscribe();
    fire();
    expect(log).toEqual([
      'counter emits 1',
      'first starts', 'second starts',
      'counter emits 2', 'first sees 2 (count 2)', 'process sees done', 'second sees 2 (count 2)', 'process sees done',
      'counter emits 3',
    ]);
    expect(b.graph.buildOrder).toEqual(['counter', 'first', 'second']);
    expect(b.graph.edges.filter((e) => e.from === 'process')).toEqual([
      { from: 'process', to: 'first', port: 'done', kind: 'event' }, { from: 'process', to: 'second', port: 'done', kind: 'event' },
    ]);
  });

  it('refuses a declared port left unprovided and a watched event mapped to nothing', () => {
    const log: string[] = [];
    const liar = spec({ name: 'liar', layer: 'state', consumes: [], provides: ['count'], emits: ['tick'], watches: [], build: () => ({ out: 0, provide: {} as Calls, on: {} }) });
    expect(() => buildFlows([liar, watcher('w')], kinds, { log })).toThrow(BuildError);
    const deaf = spec({ name: 'deaf', layer: 'controller', consumes: [], provides: [], emits: [], watches: ['tick'], build: () => ({ out: 0, provide: {}, on: {} as { tick: (v: number) => void } }) });
    expect(() => buildFlows([counter, deaf], kinds, { log })).toThrow(/deaf watches tick but maps it to nothing/);
  });
});
