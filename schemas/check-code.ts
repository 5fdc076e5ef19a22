import { createHash } from 'node:crypto';
import { goJson } from './go-json.ts';

/** MindCluster CheckCode (docs/formats.md#check-code): lowercase hex SHA-256 of the Go JSON of `value`. */
export function checkCode(value: unknown): string {
  return createHash('sha256').update(goJson(value), 'utf8').digest('hex');
}
