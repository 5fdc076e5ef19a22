/**
 * `PubFault` service (pubfault.proto, no package: `/PubFault/SendPublicFault`), docs/grpc.md#pubfault-service.
 * Every answer has gRPC status OK with the code in the body: 409 on a bad request, 410 when the
 * resource's token bucket (burst 100, 1/s) is empty, else the handler's answer.
 * Order: resource allow-list (so the per-resource buckets stay bounded) -> rate -> structure -> handler.
 */
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import { Code, Info, type Status } from './codes.ts';
import { reply, unary, type CallContext } from './call-context.ts';
import type { PubFaultHandlers } from './handlers.ts';
import { toPublicFaultRequest } from './messages.ts';
import type { KeyedBuckets } from './rate-limit.ts';
import { checkPublicFaultRequest, clip, resourceAllowed } from './validate.ts';

export const PUBFAULT_PATH = '/PubFault/';

export interface PubFaultServiceDeps {
  readonly ctx: CallContext;
  readonly handlers: PubFaultHandlers;
  readonly resources: readonly string[];
  readonly limiter: KeyedBuckets;
}

export function pubFaultService(d: PubFaultServiceDeps): UntypedServiceImplementation {
  const method = `${PUBFAULT_PATH}SendPublicFault`;
  return {
    SendPublicFault: unary<Status>(d.ctx, method, async (raw) => {
      if (raw === null || typeof raw !== 'object') return reply({ code: Code.InvalidReqParam, info: 'request is nil' });
      const req = toPublicFaultRequest(raw);
      if (!resourceAllowed(req.resource, d.resources)) {
        return reply({ code: Code.InvalidReqParam, info: `resource=${clip(req.resource)} is invalid` });
      }
      if (!d.limiter.tryTake(req.resource)) return reply({ code: Code.InvalidReqRate, info: Info.pubFaultLimited });
      const checked = checkPublicFaultRequest(req);
      if (!checked.ok) {
        d.ctx.log.warn('public fault rejected', { id: clip(req.id), resource: req.resource, reason: checked.reason });
        return reply({ code: Code.InvalidReqParam, info: checked.reason });
      }
      const s = await d.handlers.sendPublicFault(checked.value);
      return reply({ code: s.code, info: s.info });
    }),
  };
}
