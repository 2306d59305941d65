import type { Queue } from 'bullmq';
import type { RedisClient } from '../../infra/redis/connection.js';
import { QueueFactory } from '../../infra/queues/queues.js';
import type { RedisKeys } from '../../infra/redis/keys.js';
import { SessionMailbox } from '../../actors/runtime/queues.js';
import { WEBHOOK_QUEUE } from '../../actors/webhook/messages.js';

/** What batch creation sends to: the session queues and the webhook queue. */
export interface BatchProducers {
  mailbox: SessionMailbox;
  webhooks: Queue;
}

const cache = new WeakMap<RedisClient, BatchProducers>();

/**
 * Producers over the process's command connection. Web nodes are not handed
 * the data plane's mailbox (only the asker), and producing needs no
 * connection of its own, so the route builds these once per connection;
 * BullMQ does not close a shared connection, and these queues hold no other.
 */
export function batchProducers(deps: { redis: RedisClient; keys: RedisKeys; config: { sessionShards: number } }): BatchProducers {
  let p = cache.get(deps.redis);
  if (!p) {
    const queues = new QueueFactory(deps.keys, deps.redis, () => {
      throw new Error('batch producers never open workers');
    });
    p = { mailbox: new SessionMailbox(queues, deps.config.sessionShards), webhooks: queues.queue(WEBHOOK_QUEUE) };
    cache.set(deps.redis, p);
  }
  return p;
}
