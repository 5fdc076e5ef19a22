import type { ControlPlane } from '../../tools/control-plane/control-plane.ts';

export default async function globalTeardown(): Promise<void> {
  const g = globalThis as { __CONTROL_PLANE__?: ControlPlane };
  if (g.__CONTROL_PLANE__ === undefined) return;
  await g.__CONTROL_PLANE__.stop();
  g.__CONTROL_PLANE__ = undefined;
  delete process.env.CLUSTERD_TS_CONTROL_PLANE;
}
