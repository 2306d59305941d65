import type { Logger } from 'pino';
import type { Stores } from './stores.js';

export const DEFAULT_ORG = 'default';

/**
 * TROUPE_BOOTSTRAP_API_KEY / TROUPE_BOOTSTRAP_ROUTING_KEY create org
 * `default` and these keys when they do not exist yet. Safe to run from every
 * process at every start.
 */
export async function bootstrapKeys(config: { readonly bootstrapApiKey: string | null; readonly bootstrapRoutingKey: string | null }, stores: Stores, log: Logger): Promise<void> {
  if (!config.bootstrapApiKey && !config.bootstrapRoutingKey) return;
  const org = await stores.orgs.ensure(DEFAULT_ORG);
  if (config.bootstrapApiKey && (await stores.apiKeys.ensure(org._id, 'api', config.bootstrapApiKey, 'bootstrap api key'))) {
    log.info({ org: org.name, prefix: config.bootstrapApiKey.slice(0, 12) }, 'bootstrap API key created');
  }
  if (config.bootstrapRoutingKey && (await stores.apiKeys.ensure(org._id, 'routing', config.bootstrapRoutingKey, 'bootstrap routing key'))) {
    log.info({ org: org.name, prefix: config.bootstrapRoutingKey.slice(0, 12) }, 'bootstrap routing key created');
  }
}
