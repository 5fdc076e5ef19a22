import fc from 'fast-check';
import { compareUtf8, GoFloat, goFloat, goJson, GoJsonError, goMap, goMapOf, goNumber, goQuote } from './go-json.ts';

describe('goQuote (Go >= 1.22 encoding/json string escaping, HTML-safe)', () => {
  it('escapes every ASCII character exactly as Go 1.26 json.Marshal does', () => {
    let all = '';
    for (let c = 0; c < 0x80; c++) all += String.fromCharCode(c);
    // Output of Go 1.26.8 json.Marshal on the same string (checked with a scratch Go program).
    const go =
      '"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f' +
      '\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f' +
      ' !\\"#$%\\u0026\'()*+,-./0123456789:;\\u003c=\\u003e?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\\\]^_`' +
      'abcdefghijklmnopqrstuvwxyz{|}~\x7f"';
    expect(goQuote(all)).toBe(go);
  });

  it.each([
    ['"', '"\\""'],
    ['\\', '"\\\\"'],
    ['\n\r\t', '"\\n\\r\\t"'],
    ['\b\f', '"\\b\\f"'],
    ['\u0001\u001f', '"\\u0001\\u001f"'],
    ['<a href="x">&</a>', '"\\u003ca href=\\"x\\"\\u003e\\u0026\\u003c/a\\u003e"'],
    ['\u2028\u2029', '"\\u2028\\u2029"'],
    ['é中😀', '"é中😀"'],
    // Lone surrogates: what Go's json.Unmarshal makes of a `\ud800` escape, a valid U+FFFD, written raw.
    ['\ud800', '"\ufffd"'],
    ['a\udc00b', '"a\ufffdb"'],
    ['\ud83d\ude00\ud83d', '"😀\ufffd"'],
    ['', '""'],
  ])('quotes %j as %s', (input, expected) => {
    expect(goQuote(input)).toBe(expected);
  });
});

describe('goNumber', () => {
  // Left: JS value; right: Go 1.26.8 json.Marshal(float64) output.
  it.each([
    [1e-7, '1e-7'],
    [1.5e-7, '1.5e-7'],
    [-1e-7, '-1e-7'],
    [1e-6, '0.000001'],
    [1e21, '1e+21'],
    [1.2345e21, '1.2345e+21'],
    [123456789012345680000, '123456789012345680000'],
    [0.1, '0.1'],
    [1 / 3, '0.3333333333333333'],
    [5e-324, '5e-324'],
    [1.7976931348623157e308, '1.7976931348623157e+308'],
    [1e-100, '1e-100'],
    [1e100, '1e+100'],
    [100, '100'],
    [2.5, '2.5'],
    [-0, '0'],
    [1732182000123, '1732182000123'],
    [-1, '-1'],
  ])('formats %p as %s', (n, s) => {
    expect(goNumber(n)).toBe(s);
  });

  it.each([NaN, Infinity, -Infinity])('throws on %p like Go', (n) => {
    expect(() => goJson(n)).toThrow(GoJsonError);
    expect(() => goJson({ a: [n] })).toThrow(GoJsonError);
  });

  it('encodes bigint as an integer', () => {
    expect(goJson({ a: 9223372036854775807n, b: -5n })).toBe('{"a":9223372036854775807,"b":-5}');
  });
});

describe('goJson structure', () => {
  it('keeps struct (plain object) keys in insertion order and omits undefined', () => {
    expect(goJson({ z: 1, a: 'x', m: undefined, b: true, c: false })).toBe('{"z":1,"a":"x","b":true,"c":false}');
  });

  it('sorts Go map keys byte-wise (UTF-8, not UTF-16)', () => {
    const m = { b: 1, a: 2, '\uffff': 3, '😀': 4, Z: 5, é: 6 };
    // Go 1.26.8: {"Z":5,"a":2,"b":1,"é":6,"￿":3,"😀":4}
    const expected = '{"Z":5,"a":2,"b":1,"é":6,"\uffff":3,"😀":4}';
    expect(goJson(goMap(m))).toBe(expected);
    expect(goJson(new Map(Object.entries(m)))).toBe(expected);
    expect(goJson(goMapOf(Object.entries(m)))).toBe(expected);
    expect(compareUtf8('\uffff', '😀')).toBeLessThan(0);
    expect('\uffff' < '😀').toBe(false); // why the plain JS sort would be wrong
  });

  it('escapes map keys and lets maps of structs nest', () => {
    const v = { Outer: goMap({ 'k<2': { B: 1, A: goMap({ y: null, x: [] }) }, 'k&1': { B: 2, A: null } }) };
    expect(goJson(v)).toBe('{"Outer":{"k\\u00261":{"B":2,"A":null},"k\\u003c2":{"B":1,"A":{"x":[],"y":null}}}}');
  });

  it('distinguishes nil (null) from empty slices and maps', () => {
    expect(goJson({ S: null, E: [], M: null, EM: goMap({}) })).toBe('{"S":null,"E":[],"M":null,"EM":{}}');
  });

  it('goMapOf keeps the last value of a repeated key', () => {
    expect(goJson(goMapOf([['a', 1], ['a', 2]]))).toBe('{"a":2}');
  });

  it('encodes Uint8Array as base64 like Go []byte', () => {
    expect(goJson(new TextEncoder().encode('hello'))).toBe('"aGVsbG8="');
  });

  it('refuses values with no Go model', () => {
    expect(() => goJson(undefined)).toThrow(GoJsonError);
    expect(() => goJson([undefined])).toThrow(GoJsonError);
    expect(() => goJson({ f: () => 1 })).toThrow(GoJsonError);
    expect(() => goJson(new Date(0))).toThrow(GoJsonError);
    const cyc: Record<string, unknown> = {};
    cyc['self'] = cyc;
    expect(() => goJson(cyc)).toThrow(GoJsonError);
  });

  it('writes a plain number only as an integer Go can read into int64: a fraction, 1e21 or 2^53 throws (Go\'s decoder would reject it)', () => {
    expect(goJson({ t: 9007199254740991, u: -9007199254740991, z: -0 })).toBe('{"t":9007199254740991,"u":-9007199254740991,"z":0}');
    for (const bad of [1e21, 1.5, 2 ** 53, -(2 ** 53), Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => goJson({ UpdateTime: bad })).toThrow(GoJsonError);
    }
    expect(goJson({ big: 2n ** 63n - 1n })).toBe('{"big":9223372036854775807}');
  });

  it('writes a goFloat as Go formats a float64', () => {
    expect(goJson({ a: goFloat(1.5), b: goFloat(1e21), c: goFloat(1e-7), d: goFloat(-0) })).toBe('{"a":1.5,"b":1e+21,"c":1e-7,"d":0}');
    expect(() => goJson(goFloat(Number.NaN))).toThrow(GoJsonError);
  });

  it('allows the same object twice when it is not a cycle', () => {
    const shared = { a: 1 };
    expect(goJson([shared, shared])).toBe('[{"a":1},{"a":1}]');
  });
});

describe('goJson property: parses back with JSON.parse to an equal value', () => {
  // Generated payloads: JSON-safe leaves (finite doubles without -0, any strings incl. lone surrogates
  // mapped to U+FFFD on the way back), nested structs, arrays and maps.
  const leaf = fc.oneof(
    fc.string({ unit: 'binary' }),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => goFloat(Object.is(d, -0) ? 0 : d)),
    fc.integer(),
    fc.maxSafeInteger(),
    fc.boolean(),
    fc.constant(null),
  );
  const { value } = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, tie('array'), tie('object')),
    array: fc.array(tie('value'), { maxLength: 5 }),
    object: fc.dictionary(fc.string({ unit: 'binary' }), tie('value'), { maxKeys: 5 }),
  }));
  const wellFormed = (x: unknown): unknown => {
    if (x instanceof GoFloat) return x.value;
    if (typeof x === 'string') return x.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
    if (Array.isArray(x)) return x.map(wellFormed);
    if (x !== null && typeof x === 'object') {
      return Object.fromEntries(Object.entries(x).map(([k, v]) => [wellFormed(k) as string, wellFormed(v)]));
    }
    return x;
  };

  it('struct encoding round-trips', () => {
    fc.assert(
      fc.property(value, (v) => {
        expect(JSON.parse(goJson(v))).toEqual(wellFormed(v));
      }),
      { numRuns: 300 },
    );
  });

  it('map encoding round-trips and is sorted', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), value, { maxKeys: 8 }), (rec) => {
        const text = goJson(goMap(rec));
        const back = JSON.parse(text) as Record<string, unknown>;
        expect(back).toEqual(wellFormed(rec));
        const keys = Object.keys(rec).sort(compareUtf8);
        expect(text).toBe(`{${keys.map((k) => `${goQuote(k)}:${goJson(rec[k])}`).join(',')}}`);
      }),
      { numRuns: 200 },
    );
  });
});
