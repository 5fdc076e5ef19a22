import { Ajv } from 'ajv';
import { ajvErrors, MAX_JSON_ERROR_CHARS, parseJson, parseValidated, type Parsed } from './parsed.ts';

interface Point { x: number; y?: string }
const schema = {
  type: 'object',
  properties: { x: { type: 'integer' }, y: { type: 'string' } },
  required: ['x'],
  additionalProperties: false,
};
const validate = new Ajv({ allErrors: false }).compile<Point>(schema);
const validateAll = new Ajv({ allErrors: true }).compile<Point>(schema);

const reasonOf = (p: Parsed<unknown>): string => {
  if (p.ok) throw new Error(`expected a rejection, got ${JSON.stringify(p.value)}`);
  return p.reason;
};
/** The message JSON.parse itself gives for `text`. */
const parseError = (text: string): string => {
  try {
    JSON.parse(text);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error(`${text} parsed`);
};

describe('parseJson', () => {
  it('returns the parsed value, including null and scalars', () => {
    expect(parseJson('doc', '{"a":[1,"b",null]}')).toEqual({ ok: true, value: { a: [1, 'b', null] } });
    expect(parseJson('doc', 'null')).toEqual({ ok: true, value: null });
    expect(parseJson('doc', ' 42 ')).toEqual({ ok: true, value: 42 });
  });

  it('rejects a non-string before anything else', () => {
    for (const v of [undefined, null, 42, { a: 1 }, Buffer.from('{}')]) {
      expect(reasonOf(parseJson('doc', v as unknown as string, { maxChars: 1 }))).toBe('doc: not a string');
    }
  });

  it('refuses text over maxChars without parsing it, and accepts text of exactly maxChars', () => {
    expect(reasonOf(parseJson('doc', '[1,2]  ', { maxChars: 6 }))).toBe('doc: oversized (7 chars)');
    // Oversized wins even when the text is not JSON at all: the cap runs before JSON.parse.
    expect(reasonOf(parseJson('doc', '{'.repeat(11), { maxChars: 10 }))).toBe('doc: oversized (11 chars)');
    expect(parseJson('doc', '[1,2]  ', { maxChars: 7 })).toEqual({ ok: true, value: [1, 2] });
    expect(parseJson('doc', ` ${' '.repeat(100_000)}1`)).toEqual({ ok: true, value: 1 });
  });

  it('reports malformed JSON with JSON.parse\'s own message', () => {
    for (const text of ['{', '', '{"a":1,}', "{'a':1}", 'x'.repeat(500)]) {
      expect(reasonOf(parseJson('doc', text))).toBe(`doc: malformed JSON: ${parseError(text).slice(0, MAX_JSON_ERROR_CHARS)}`);
    }
  });

  it('cuts a long parser message to 200 characters', () => {
    // V8's own messages stay short, so a stand-in JSON.parse produces a long one.
    const real = JSON.parse;
    JSON.parse = () => {
      throw new SyntaxError(`${'a'.repeat(MAX_JSON_ERROR_CHARS)}TAIL`);
    };
    try {
      expect(reasonOf(parseJson('doc', '{}'))).toBe(`doc: malformed JSON: ${'a'.repeat(MAX_JSON_ERROR_CHARS)}`);
    } finally {
      JSON.parse = real;
    }
    expect(MAX_JSON_ERROR_CHARS).toBe(200);
  });
});

describe('ajvErrors', () => {
  it('joins `instancePath message` with "; ", `/` for the root, `invalid` for a missing message', () => {
    expect(ajvErrors({ errors: [{ instancePath: '', message: 'must be object' }, { instancePath: '/a/0', message: undefined }] }))
      .toBe('/ must be object; /a/0 invalid');
  });

  it('is empty when there are no errors', () => {
    expect(ajvErrors({ errors: null })).toBe('');
    expect(ajvErrors({})).toBe('');
  });

  it('formats the errors a real validator left behind', () => {
    expect(validateAll({ x: 1.5, y: 2 })).toBe(false);
    expect(ajvErrors(validateAll)).toBe('/x must be integer; /y must be string');
  });
});

describe('parseValidated', () => {
  it('returns the value when it matches the schema', () => {
    expect(parseValidated('pt', '{"x":3,"y":"z"}', validate)).toEqual({ ok: true, value: { x: 3, y: 'z' } });
    expect(parseValidated('pt', '{"x":3}', validate, { maxChars: 7 })).toEqual({ ok: true, value: { x: 3 } });
  });

  it('rejects a schema mismatch as `<what>: <ajv errors>`', () => {
    expect(reasonOf(parseValidated('pt', '{"x":"3"}', validate))).toBe('pt: /x must be integer');
    expect(reasonOf(parseValidated('pt', '[]', validate))).toBe('pt: / must be object');
    expect(reasonOf(parseValidated('pt', 'null', validate))).toBe('pt: / must be object');
    expect(reasonOf(parseValidated('pt', '{}', validate))).toBe("pt: / must have required property 'x'");
    expect(reasonOf(parseValidated('pt', '{"x":1.5,"y":2}', validateAll))).toBe('pt: /x must be integer; /y must be string');
  });

  it('passes the parseJson rejections through unchanged', () => {
    expect(reasonOf(parseValidated('pt', 7 as unknown as string, validate))).toBe('pt: not a string');
    expect(reasonOf(parseValidated('pt', '{"x":30}', validate, { maxChars: 7 }))).toBe('pt: oversized (8 chars)');
    expect(reasonOf(parseValidated('pt', '{"x":', validate))).toBe(`pt: malformed JSON: ${parseError('{"x":')}`);
  });

  it('does not run the validator when the text is refused earlier', () => {
    let calls = 0;
    const counting = Object.assign((d: unknown): d is Point => {
      calls++;
      return validate(d);
    }, { errors: null, schema, schemaEnv: validate.schemaEnv });
    parseValidated('pt', '{"x":', counting);
    parseValidated('pt', '{"x":30}', counting, { maxChars: 7 });
    expect(calls).toBe(0);
    expect(parseValidated('pt', '{"x":30}', counting).ok).toBe(true);
    expect(calls).toBe(1);
  });
});

describe('rejection kinds (the reason label of clusterd_invalid_input_total)', () => {
  it('README lists every kind', async () => {
    const { readFileSync } = await import('node:fs');
    const { REJECT_KINDS } = await import('./parsed.ts');
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    for (const kind of Object.keys(REJECT_KINDS)) expect({ kind, listed: readme.includes(`| \`${kind}\` |`) }).toEqual({ kind, listed: true });
  });

  it('parseJson and parseValidated say malformed_json, oversized, schema or out_of_range', () => {
    const kind = (p: Parsed<unknown>): string | undefined => (p.ok ? undefined : p.kind);
    expect(kind(parseJson('doc', '{'))).toBe('malformed_json');
    expect(kind(parseJson('doc', '[1]', { maxChars: 1 }))).toBe('oversized');
    const ranged = new Ajv().compile({ type: 'object', properties: { t: { type: 'integer', minimum: 0, maximum: 9007199254740991 } } });
    expect(kind(parseValidated('doc', '{"t":1e21}', ranged))).toBe('out_of_range');
    expect(kind(parseValidated('doc', '{"t":1.5}', ranged))).toBe('out_of_range');
    expect(kind(parseValidated('doc', '{"t":"1"}', ranged))).toBe('schema');
  });
});
