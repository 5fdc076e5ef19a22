import { TestScheduler } from 'rxjs/testing';
import { map } from 'rxjs';
import { runPolicy, type ConfigChange, type PolicyStep, type Tick } from './policy-operator.ts';

/** A toy policy: counts inputs, asks for a tick `config` ms after each input, counts ticks. */
type S = { readonly inputs: number; readonly ticks: number };
const policy = (s: S, i: 'x' | Tick | ConfigChange<number>, nowMs: number, delay: number): PolicyStep<S, string> => {
  if (i === 'x') return { state: { ...s, inputs: s.inputs + 1 }, outputs: [`in@${nowMs}`], reasons: [], nextDeadlineMs: nowMs + delay };
  if (i.type === 'config') return { state: s, outputs: [`cfg=${i.config}`], reasons: [], nextDeadlineMs: undefined };
  return { state: { ...s, ticks: s.ticks + 1 }, outputs: [`tick@${nowMs}`], reasons: [], nextDeadlineMs: undefined };
};
const initial = { state: { inputs: 0, ticks: 0 }, config: 10 };

describe('runPolicy', () => {
  it('turns deadlines into ticks on the scheduler and completes when nothing is pending', () => {
    new TestScheduler((a, b) => expect(a).toEqual(b)).run(({ cold, expectObservable }) => {
      const out = cold<'x'>('x 4ms x|').pipe(runPolicy(policy, initial), map((s) => s.outputs.join()));
      expectObservable(out).toBe('a 4ms b 9ms (c|)', { a: 'in@0', b: 'in@5', c: 'tick@15' });
    });
  });

  it('config changes travel in the input stream and reach the policy', () => {
    new TestScheduler((a, b) => expect(a).toEqual(b)).run(({ cold, expectObservable }) => {
      const inputs = cold<'x' | ConfigChange<number>>('c x|', { c: { type: 'config', config: 100 }, x: 'x' });
      const out = inputs.pipe(runPolicy(policy, initial), map((s) => s.outputs.join()));
      expectObservable(out).toBe('a b 99ms (t|)', { a: 'cfg=100', b: 'in@1', t: 'tick@101' });
    });
  });

  it('a throwing policy errors the stream; input errors pass through', () => {
    new TestScheduler((a, b) => expect(a).toEqual(b)).run(({ cold, expectObservable }) => {
      const boom = () => {
        throw new Error('bug');
      };
      expectObservable(cold<'x'>('x').pipe(runPolicy(boom, initial))).toBe('#', undefined, new Error('bug'));
      expectObservable(cold<'x'>('#').pipe(runPolicy(policy, initial))).toBe('#');
    });
  });
});
