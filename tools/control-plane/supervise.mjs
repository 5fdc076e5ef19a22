#!/usr/bin/env node
// Runs one control-plane process in its own process group and takes the group down when the
// process that asked for it dies (even by SIGKILL), so a crashed test run leaves nothing behind.
// Usage: supervise.mjs <watchPid|0> <logFile> -- <binary> [args...]
import { spawn } from 'node:child_process';
import { openSync } from 'node:fs';

const sep = process.argv.indexOf('--');
const [watchPidArg, logFile] = process.argv.slice(2, sep);
const [bin, ...args] = process.argv.slice(sep + 1);
const watchPid = Number(watchPidArg);
const out = openSync(logFile, 'a');
const child = spawn(bin, args, { stdio: ['ignore', out, out] });

const stopGroup = (signal) => {
  try { child.kill(signal); } catch { /* already gone */ }
};
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
  process.on(sig, () => { stopGroup('SIGTERM'); setTimeout(() => { stopGroup('SIGKILL'); process.exit(0); }, 3000).unref(); });
}
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));

if (watchPid > 0) {
  setInterval(() => {
    try { process.kill(watchPid, 0); } catch {
      stopGroup('SIGKILL');
      process.exit(0);
    }
  }, 500);
}
