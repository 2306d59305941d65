import { once } from '../lib/lifecycle/shutdown.js';
import { createRouterApp } from '../edge/router/app.js';
import { routingEnvelope } from '../edge/router/envelope.js';
import type { Core } from './core.js';
import { listen } from './http-server.js';

/** The `{routing_url}` routing interface on ROUTER_PORT. */
export async function startRouter(core: Core, port = core.config.routerPort): Promise<{ port: number }> {
  const router = createRouterApp(core);
  // Registered before the listener so that, closing in reverse, the listener drains first and the pool after.
  core.shutdown.add(once('router-upstreams', router.close));
  const { port: actual, closer } = await listen('router', router.listener, { port, setting: 'ROUTER_PORT', host: core.config.routerHost, graceMs: Math.min(5000, core.config.shutdownTimeoutMs), drain: core.drain, log: core.log, envelope: routingEnvelope });
  core.shutdown.add(closer);
  core.log.info({ role: 'router', host: core.config.routerHost ?? '*', port: actual, routing_url: core.config.routingPublicUrl }, 'router listening');
  return { port: actual };
}
