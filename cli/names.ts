/**
 * Names from the command line, checked before they reach a request: every one goes into an API
 * path (runtime/kube-client.ts `paths` encodes each as one segment as well), so a name like
 * `node-000/../../../mindx-dl/configmaps/x` is refused here (exit 2) and could not address another
 * object there.
 */
import { NODE_NAME } from '../schemas/release-request/release-request.ts';
import { CliError, EXIT } from './errors.ts';

/** A namespace: a DNS-1123 label. */
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

const shown = (v: string): string => JSON.stringify(v.slice(0, 80));

export function checkNodeName(node: string): string {
  if (!NODE_NAME.test(node)) throw new CliError(`not a node name: ${shown(node)} (a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', at most 253)`, EXIT.usage);
  return node;
}

export function checkNamespace(flag: string, ns: string): string {
  if (!NAMESPACE.test(ns)) throw new CliError(`${flag}: not a namespace: ${shown(ns)} (a DNS-1123 label)`, EXIT.usage);
  return ns;
}
