/**
 * Generators and wire helpers of the gRPC fuzz tests (grpc/endpoint-fuzz.test.ts on the transport,
 * test/integration/grpc-fuzz.test.ts on the controller's real handlers). Test code only.
 */
import { readFileSync, readdirSync } from 'node:fs';
import fc from 'fast-check';
import { DEFAULT_PUBLIC_FAULT_RESOURCES } from './validate.ts';

/** Seed of a fuzz run: GRPC_FUZZ_SEED replays one. */
export const fuzzSeed = (): number => Number(process.env.GRPC_FUZZ_SEED ?? Date.now() % 2 ** 31);

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** Every field name in our .proto files: the keys of the structured random payloads. */
export const FIELD_NAMES = [...new Set(readdirSync(new URL('./protos/', import.meta.url)).flatMap((f) =>
  [...readFileSync(new URL(`./protos/${f}`, import.meta.url), 'utf8').matchAll(/^\s*(?:repeated\s+)?[\w.<>, ]+\s+(\w+)\s*=\s*\d+\s*;/gm)].map((m) => m[1]!)))];

/** One HTTP/2 frame: 24-bit length, type, flags, 31-bit stream id, payload. */
export function frame(type: number, flags: number, streamId: number, payload: Uint8Array): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(streamId & 0x7fffffff, 5);
  return Buffer.concat([h, payload]);
}

/** A gRPC length-prefixed message: compressed flag, 32-bit length (may lie), body. */
export function grpcMessage(body: Uint8Array, opts: { compressed?: number; declared?: number } = {}): Buffer {
  const h = Buffer.alloc(5);
  h[0] = opts.compressed ?? 0;
  h.writeUInt32BE((opts.declared ?? body.length) >>> 0, 1);
  return Buffer.concat([h, body]);
}

/** Protobuf wire encoding of random fields: valid framing, arbitrary field numbers, wire types and values. */
export const varint = (n: bigint): number[] => {
  const out: number[] = [];
  let v = BigInt.asUintN(64, n);
  do { let b = Number(v & 0x7fn); v >>= 7n; if (v > 0n) b |= 0x80; out.push(b); } while (v > 0n);
  return out;
};
const protoField = fc.tuple(fc.integer({ min: 1, max: 12 }), fc.constantFrom(0, 1, 2, 5), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }), fc.uint8Array({ maxLength: 40 }))
  .map(([field, wire, n, bytes]) => {
    const key = varint(BigInt((field << 3) | wire));
    if (wire === 0) return [...key, ...varint(n)];
    if (wire === 1) return [...key, ...Buffer.alloc(8, Number(n & 0xffn))];
    if (wire === 5) return [...key, ...Buffer.alloc(4, Number(n & 0xffn))];
    return [...key, ...varint(BigInt(bytes.length)), ...bytes];
  });
export const protoBytes = fc.array(protoField, { maxLength: 12 }).map((fs) => Uint8Array.from(fs.flat()));

/** Objects shaped like our messages (known field names, random values and nesting); `known` are likely values (job ids, ...). */
export function messageObject(known: readonly string[]): fc.Arbitrary<Record<string, unknown>> {
  const { value } = fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof({ depthSize: 'small', withCrossShrink: true },
      fc.string({ maxLength: 30 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null),
      fc.constantFrom(...known, ...DEFAULT_PUBLIC_FAULT_RESOURCES, '-1', 'taskd', '80E18402', '220001001', '2025-01-01'),
      fc.array(tie('value'), { maxLength: 4 }),
      fc.dictionary(fc.constantFrom(...FIELD_NAMES), tie('value'), { maxKeys: 6 })),
  }));
  return fc.dictionary(fc.constantFrom(...FIELD_NAMES), value, { maxKeys: 8 });
}

