/** The user's own apiserver access: their kubeconfig (KUBECONFIG, ~/.kube/config or --kubeconfig) and context. */
// The deep import, as runtime/kube-client.ts: the package root loads every generated API and model.
import { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { HttpKubeClient } from '../runtime/kube-client.ts';
import { CliError, EXIT } from './errors.ts';

export interface ConnectOptions {
  readonly kubeconfig?: string;
  readonly context?: string;
}

export function connect(o: ConnectOptions): HttpKubeClient {
  const kc = new KubeConfig();
  try {
    if (o.kubeconfig !== undefined && o.kubeconfig !== '') kc.loadFromFile(o.kubeconfig);
    else kc.loadFromDefault();
    if (o.context !== undefined && o.context !== '') kc.setCurrentContext(o.context);
    return new HttpKubeClient(kc);
  } catch (e) {
    throw new CliError(`cannot load the kubeconfig: ${(e as Error).message}`, EXIT.unreachable);
  }
}

/** Who the apiserver says we are (SelfSubjectReview); the kubeconfig's user name if that API is not allowed. */
export async function whoAmI(client: HttpKubeClient): Promise<string> {
  try {
    const r = await client.request<{ status?: { userInfo?: { username?: string } } }>('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    const name = r.status?.userInfo?.username;
    if (name) return name;
  } catch { /* fall through: older apiservers, or the API disabled */ }
  return `kubeconfig:${client.kc.getCurrentUser()?.name ?? 'unknown'}`;
}
