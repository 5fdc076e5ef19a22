/**
 * The go-decode test peer (tools/go-decode): decodes a cluster-info value with Go's encoding/json
 * into the consumers' Go types. Built once per source hash into ~/.cache/clusterd-ts/bin (Go is a
 * prerequisite of `make test`).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../../tools/go-decode/', import.meta.url));

export function goDecoder(): string {
  const hash = createHash('sha256').update(readFileSync(join(SRC, 'main.go'))).update(readFileSync(join(SRC, 'go.mod'))).digest('hex').slice(0, 12);
  const dir = join(process.env['CLUSTERD_TS_CACHE'] ?? join(homedir(), '.cache', 'clusterd-ts'), 'bin', `go-decode-${hash}`);
  const bin = join(dir, 'go-decode');
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    execFileSync('go', ['build', '-o', bin, '.'], { cwd: SRC, env: { ...process.env, GOFLAGS: '-p=1', GOWORK: 'off' }, stdio: 'pipe' });
  }
  return bin;
}

/** Go's error decoding `value` as cluster-info `kind`, or undefined when it decodes. */
export function goDecodeError(bin: string, kind: 'device' | 'switch' | 'node', value: string): string | undefined {
  try {
    execFileSync(bin, [kind], { input: value, stdio: 'pipe' });
    return undefined;
  } catch (e) {
    return String((e as { stderr?: Buffer }).stderr ?? e).trim();
  }
}
