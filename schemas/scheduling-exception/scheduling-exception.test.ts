import { MAX_EXCEPTION_MESSAGE_CHARS, fitExceptionReport, limitMessage } from './scheduling-exception.ts';

describe('scheduling-exception-report bounds (--output-limits)', () => {
  it('a message past the bound is cut and marked; one within is kept as is', () => {
    expect(limitMessage('short')).toEqual({ message: 'short', cut: false });
    const long = limitMessage('m'.repeat(MAX_EXCEPTION_MESSAGE_CHARS + 1));
    expect(long).toEqual({ message: `${'m'.repeat(MAX_EXCEPTION_MESSAGE_CHARS)} [cut]`, cut: true });
  });

  it('the data within the size: the largest entries left out first', () => {
    const data = { a: 'x'.repeat(10), b: 'y'.repeat(100), c: 'z'.repeat(50) };
    expect(fitExceptionReport(data, 1_000)).toEqual({ data, omitted: [] });
    expect(fitExceptionReport(data, 100)).toEqual({ data: { a: data.a, c: data.c }, omitted: ['b'] });
    expect(fitExceptionReport(data, 20)).toEqual({ data: { a: data.a }, omitted: ['b', 'c'] });
  });
});
