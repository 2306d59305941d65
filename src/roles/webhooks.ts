import type { Core } from './core.js';

/** The webhook delivery actor (Procfile role `webhooks`). */
export async function startWebhooks(core: Core): Promise<void> {
  const { startWebhookActor } = await import('../../actors/webhook/worker.js');
  await startWebhookActor(core);
  core.log.info({ role: 'webhooks', actors: ['webhook'], retries: core.config.webhookRetrySchedule.length }, 'webhooks started');
}
