import type { Core } from './core.js';

/** Webhook delivery actor. Not registered yet: the role connects, says so, and idles. */
export async function startWebhooks(core: Core): Promise<void> {
  core.log.info({ role: 'webhooks', actors: [] }, 'webhooks started; webhook delivery is not in this build, idling');
}
