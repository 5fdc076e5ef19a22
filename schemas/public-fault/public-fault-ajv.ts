/** The public-fault JSON Schema's validators, generated at build time (tools/gen-validators.ts): no schema compiler at run time. */
import type { SchemaValidator } from '../parsed.ts';
import * as generated from './public-fault.validators.gen.ts';

/** Shape as the schema admits it, before the value rules (optional parts may be absent or null). */
export interface RawPubFaultConfig {
  publicFaultCode: Partial<Record<string, string[] | null>>;
  publicFaultResource: string[] | null;
}

/** Types only; the value rules are in public-fault.ts. */
export const validatePubFaultInfo = generated.validatePubFaultInfo as SchemaValidator<object>;
export const validatePublicFaultConfiguration = generated.validatePublicFaultConfiguration as SchemaValidator<RawPubFaultConfig>;
