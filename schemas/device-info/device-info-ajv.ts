/**
 * The device-info JSON Schema, compiled once (formats.md 1.1). Each parser module asks for its
 * validator by `$defs` name and gives it its own type (so this module imports none of theirs).
 */
import { Ajv, type ValidateFunction } from 'ajv';
import schema from './device-info.schema.json' with { type: 'json' };

const ajv = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true });
ajv.addSchema(schema);

export const deviceInfoValidator = <T>(name: string): ValidateFunction<T> => {
  const v = ajv.getSchema<T>(`${schema.$id}#/$defs/${name}`);
  if (v === undefined) throw new Error(`device-info schema has no $defs/${name}`);
  return v;
};
