/**
 * The JSON Schema validators as code (start time and heap, docs/benchmarks.md "ajv standalone validators"):
 * ajv compiles each schema here, at build time, and writes the validator it generates
 * (ajv's standalone mode, `ajv/dist/standalone`) into `<schema>.validators.gen.ts` beside it. The
 * product imports those files and never loads ajv's compiler: compiling the schemas at import time
 * cost the idle controller about 13 MiB RSS and 0.4 s of CPU at start.
 *
 * `node tools/gen-validators.ts --write` after changing a schema or the table below;
 * tools/gen-validators.test.ts fails while a generated file differs from what this writes. Each
 * entry keeps the ajv options the module compiled with before, so the checks, error texts
 * (instancePath, message, keyword) and reject kinds are ajv's own, unchanged.
 */
import { Ajv, type Options } from 'ajv';
import standalone from 'ajv/dist/standalone/index.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');

interface Spec {
  /** The schema, relative to the repository. */
  readonly schema: string;
  readonly options: Options;
  /** Export name -> the schema part it validates: '' for the whole schema, else a JSON pointer such as `/$defs/DeviceMap`. */
  readonly exports: Readonly<Record<string, string>>;
}

const STRICT: Options = { allErrors: false, strict: true, allowUnionTypes: true };
const UNION: Options = { allErrors: false, allowUnionTypes: true };

export const SPECS: readonly Spec[] = [
  { schema: 'schemas/cluster-info/cluster-info.schema.json', options: STRICT,
    exports: { validateDeviceMap: '/$defs/DeviceMap', validateNodeMap: '/$defs/NodeMap', validateSwitchMap: '/$defs/SwitchMap' } },
  { schema: 'schemas/device-info/device-info.schema.json', options: STRICT,
    exports: {
      validateDeviceInfoCfg: '/$defs/DeviceInfoCfg', validateUpgradeFaultReason: '/$defs/UpgradeFaultReason',
      validateDeviceFaultList: '/$defs/DeviceFaultList', validateSwitchFaultInfo: '/$defs/SwitchFaultInfo',
      validateSwitchFaultEvent: '/$defs/SwitchFaultEvent',
    } },
  { schema: 'schemas/escalation-state/escalation-state.schema.json', options: STRICT, exports: { validate: '' } },
  { schema: 'schemas/fault-job-info/fault-job-info.schema.json', options: UNION, exports: { validate: '' } },
  { schema: 'schemas/fault-code/fault-code.schema.json', options: { allErrors: false, strict: true }, exports: { validate: '' } },
  { schema: 'schemas/fault-config-job/fault-config-job.schema.json', options: UNION, exports: { validate: '' } },
  { schema: 'schemas/job-knobs/job-knobs.schema.json', options: { allErrors: false }, exports: { validate: '' } },
  { schema: 'schemas/job-reschedule-reason/job-reschedule-reason.schema.json', options: UNION, exports: { validate: '' } },
  { schema: 'schemas/job-state/job-state.schema.json', options: UNION, exports: { validate: '' } },
  { schema: 'schemas/manual-info/manual-info.schema.json', options: STRICT, exports: { validate: '' } },
  { schema: 'schemas/node-info/node-info.schema.json', options: STRICT, exports: { validate: '' } },
  { schema: 'schemas/public-fault/public-fault.schema.json', options: STRICT,
    exports: { validatePubFaultInfo: '/$defs/PubFaultInfo', validatePublicFaultConfiguration: '/$defs/PublicFaultConfiguration' } },
  { schema: 'schemas/reset-config/reset-config.schema.json', options: UNION, exports: { validate: '' } },
  { schema: 'schemas/tor-share/tor-share.schema.json', options: UNION, exports: { validate: '' } },
  { schema: 'schemas/vcjob-fault-npu/vcjob-fault-npu.schema.json', options: UNION,
    exports: { validateFaultNodes: '/definitions/faultNodes', validateRemainRetryTimes: '/definitions/remainRetryTimes' } },
];

/** `schemas/x/x.schema.json` -> `schemas/x/x.validators.gen.ts`. */
export const outputOf = (spec: Spec): string => spec.schema.replace(/\.schema\.json$/, '.validators.gen.ts');

/**
 * ajv's ESM standalone code still reaches its runtime helpers (e.g. ucs2length for maxLength) with
 * `require("ajv/dist/runtime/<name>")`, which an ES module lacks: import each one instead.
 */
function importRuntime(code: string): { imports: string[]; code: string } {
  const imports: string[] = [];
  const out = code.replace(/require\("ajv\/dist\/runtime\/([a-z0-9]+)"\)/gi, (_m, name: string) => {
    const id = `ajvRuntime_${name}`;
    const line = `import ${id} from 'ajv/dist/runtime/${name}.js';`;
    if (!imports.includes(line)) imports.push(line);
    return id;
  });
  if (/\brequire\(/.test(out)) throw new Error('ajv standalone code has a require() this generator does not rewrite');
  return { imports, code: out };
}

/** The text of one generated module. */
export function generate(spec: Spec): string {
  const schema = JSON.parse(readFileSync(join(REPO, spec.schema), 'utf8')) as { $id?: string };
  const id = schema.$id ?? basename(spec.schema);
  const ajv = new Ajv({ ...spec.options, code: { source: true, esm: true, lines: true } });
  ajv.addSchema(schema, schema.$id === undefined ? id : undefined);
  const refs = Object.fromEntries(Object.entries(spec.exports).map(([name, pointer]) => [name, pointer === '' ? id : `${id}#${pointer}`]));
  const { imports, code } = importRuntime(standalone.default(ajv, refs));
  // Typed exports: each is a SchemaValidator (parsed.ts); the importing module names its own type.
  const typed = code.replace(/^export const (\w+) = /gm, 'export const $1: SchemaValidator = ');
  const parsedTs = relative(dirname(join(REPO, outputOf(spec))), join(REPO, 'schemas', 'parsed.ts'));
  return [
    '// @ts-nocheck: code generated by ajv (standalone mode), not written for the type checker',
    `// Generated by \`node tools/gen-validators.ts --write\` from ${basename(spec.schema)}; do not edit.`,
    `import type { SchemaValidator } from '${parsedTs.startsWith('.') ? parsedTs : `./${parsedTs}`}';`,
    ...imports,
    typed.replace(/^"use strict";\n?/, ''),
    '',
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const write = process.argv.includes('--write');
  let stale = 0;
  for (const spec of SPECS) {
    const path = join(REPO, outputOf(spec));
    const text = generate(spec);
    let old = '';
    try { old = readFileSync(path, 'utf8'); } catch { /* not generated yet */ }
    if (old === text) continue;
    stale++;
    if (write) writeFileSync(path, text);
    process.stdout.write(`${write ? 'wrote' : 'stale'} ${outputOf(spec)}\n`);
  }
  if (!write && stale > 0) process.exit(1);
}
