/** What @kubernetes/client-node's dist/config.js imports from './gen/index.js' (see client-node-slim.ts). */
export { createConfiguration } from '@kubernetes/client-node/dist/gen/configuration.js';
export { ServerConfiguration } from '@kubernetes/client-node/dist/gen/servers.js';
