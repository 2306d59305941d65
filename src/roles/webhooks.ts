import type { ActorRuntime } from '../../actors/runtime/runtime.js';
import type { Resolver } from '../lib/net/resolver.js';
import { webhookPorts } from './actor-ports.js';
import type { Core } from './core.js';

/** The webhook delivery actor (Procfile role `webhooks`). */
export async function startWebhooks(core: Core, runtime: ActorRuntime, opts: { resolver?: Resolver } = {}): Promise<void> {
  const { webhookActor } = await import('../../actors/webhook/actor.js');
  const { config } = core;
  // An attempt may take the whole timeout; the lock must outlast it.
  await runtime.start(webhookActor, webhookPorts(core, opts), { concurrency: config.webhookConcurrency, lockMs: Math.max(30_000, config.webhookTimeoutMs * 2 + 10_000), gateBatch: false, perKeyLimit: config.webhookEndpointConcurrency });
  core.log.info({ role: 'webhooks', actors: ['webhook'], retries: config.webhookRetrySchedule.length }, 'webhooks started');
}
