/**
 * Exit codes of kubectl-clusterd (documented in the README and `--help`), and the translation of
 * apiserver answers into messages an operator can act on.
 */
import { ApiError } from '../runtime/kube-client.ts';

export const EXIT = {
  ok: 0,
  /** Anything unexpected (an apiserver 5xx, malformed data that stops the command). */
  error: 1,
  /** Bad arguments or flags. */
  usage: 2,
  /** The thing asked about does not exist (no history for the job, no such node's device-info). */
  notFound: 3,
  /** RBAC denied a request the command needs. */
  forbidden: 4,
  /** The apiserver cannot be reached or did not accept the credentials (kubeconfig). */
  unreachable: 5,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export class CliError extends Error {
  readonly code: ExitCode;
  constructor(message: string, code: ExitCode) {
    super(message);
    this.code = code;
  }
}

/** `list decisionrecords.clusterd-ts.io in namespace team-a` from an API path and method. */
export function describeRequest(method: string, path: string): string {
  const m = /^\/(?:api\/v1|apis\/([^/]+)\/[^/]+)(?:\/namespaces\/([^/]+))?\/([^/?]+)(?:\/([^/?]+))?/.exec(path);
  if (m === null) return `${method} ${path}`;
  const [, group, ns, resource, name] = m;
  const verb = method === 'GET' ? (name === undefined ? 'list' : 'get') : method === 'POST' ? 'create' : method === 'PATCH' ? 'patch' : method === 'PUT' ? 'update' : method.toLowerCase();
  const what = `${resource}${group === undefined ? '' : `.${group}`}${name === undefined ? '' : ` ${name}`}`;
  return `${verb} ${what}${ns === undefined ? ' (cluster-wide)' : ` in namespace ${ns}`}`;
}

/** Any thrown value -> CliError with the right exit code and a one-line reason. */
export function toCliError(e: unknown): CliError {
  if (e instanceof CliError) return e;
  if (e instanceof ApiError) {
    const what = describeRequest(e.method, e.path);
    const msg = (e.body as { message?: string } | undefined)?.message ?? e.message;
    if (e.statusCode === 403) return new CliError(`forbidden: your user may not ${what}. Ask for the kubectl-clusterd Role (README, "kubectl clusterd" RBAC). apiserver: ${msg}`, EXIT.forbidden);
    if (e.statusCode === 401) return new CliError(`unauthorized: the apiserver did not accept the credentials of your kubeconfig (${msg})`, EXIT.unreachable);
    if (e.statusCode === 404) return new CliError(`not found: ${what} (${msg})`, EXIT.notFound);
    return new CliError(`apiserver answered ${e.statusCode} to ${what}: ${msg}`, EXIT.error);
  }
  const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  const cause = err.cause?.code ?? err.cause?.message;
  if (err.name === 'TimeoutError' || cause !== undefined && /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ETIMEDOUT|ECONNRESET|certificate|CERT/i.test(cause)) {
    return new CliError(`cannot reach the apiserver: ${cause ?? err.message}`, EXIT.unreachable);
  }
  return new CliError(String(err.message ?? e), EXIT.error);
}
