import type { RedisClient } from '../../infra/redis/connection.js';
import type { RedisKeys } from '../../infra/redis/keys.js';
import { batchProducers } from '../../src/batches/producers.js';
import { newId } from '../../src/domain/ids.js';
import type { RedeliverJob } from './messages.js';

/**
 * Asks the webhook actor for one more attempt of a logged delivery, now. Web
 * nodes have no data plane, so this uses the `webhooks` producer kept per
 * command connection. Each request is its own job.
 */
export async function requestRedelivery(deps: { redis: RedisClient; keys: RedisKeys; config: { sessionShards: number } }, job: Omit<RedeliverJob, 'kind'>): Promise<void> {
  const data: RedeliverJob = { kind: 'redeliver', ...job };
  await batchProducers(deps).webhooks.add('redeliver', data, {
    jobId: `whr-${job.delivery_id}-${newId('request')}`,
    attempts: 1,
    removeOnComplete: { age: 3600, count: 10_000 },
    removeOnFail: { age: 7 * 24 * 3600 },
  });
}
