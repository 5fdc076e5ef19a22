/**
 * Loads @kubernetes/client-node without its generated API (its memory and start-up time). We use three of
 * its parts: KubeConfig (kubeconfig, in-cluster and exec/OIDC auth), Watch and RequestContext. But
 * its config.js imports `./gen/index.js` for two names, and that index loads every generated API
 * class and model of Kubernetes: about 45 MiB of RSS (18 MiB of heap) that an idle controller
 * never touches. This resolve hook hands config.js a module with just those two names, from the
 * same package files. Registered by main.ts before anything imports the client (tests, tools and
 * the bench's in-process runs load the whole package, which is the same code).
 */
import { registerHooks } from 'node:module';
import { extname } from 'node:path';

const GEN_INDEX = '/@kubernetes/client-node/dist/gen/index.js';
/** Beside this file, with its extension (.ts run directly, .js from dist/). */
const SLIM = new URL(`./client-node-gen-slim${extname(new URL(import.meta.url).pathname)}`, import.meta.url).href;

export function registerClientNodeSlim(): void {
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const r = nextResolve(specifier, context);
      if (r.url.endsWith(GEN_INDEX) && context.parentURL?.endsWith('/@kubernetes/client-node/dist/config.js') === true) {
        return { ...r, url: SLIM, shortCircuit: true };
      }
      return r;
    },
  });
}
