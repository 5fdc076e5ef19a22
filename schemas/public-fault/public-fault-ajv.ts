/** The public-fault JSON Schema, compiled once. */
import { Ajv, type ValidateFunction } from 'ajv';
import schema from './public-fault.schema.json' with { type: 'json' };

/** Shape as the schema admits it, before the value rules (optional parts may be absent or null). */
export interface RawPubFaultConfig {
  publicFaultCode: Partial<Record<string, string[] | null>>;
  publicFaultResource: string[] | null;
}

const ajv = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true });
ajv.addSchema(schema);
const def = <T>(name: string): ValidateFunction<T> => {
  const v = ajv.getSchema<T>(`${schema.$id}#/$defs/${name}`);
  if (v === undefined) throw new Error(`public-fault schema has no $defs/${name}`);
  return v;
};

/** Types only; the value rules are in public-fault.ts. */
export const validatePubFaultInfo = def<object>('PubFaultInfo');
export const validatePublicFaultConfiguration = def<RawPubFaultConfig>('PublicFaultConfiguration');
