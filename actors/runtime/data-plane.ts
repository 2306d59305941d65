import type { Queue } from 'bullmq';
import type { RedisClient } from '../../infra/redis/connection.js';
import { QueueFactory } from '../../infra/queues/queues.js';
import type { RedisKeys } from '../../infra/redis/keys.js';
import { once, type ShutdownList } from '../../src/lifecycle/shutdown.js';
import { PubSubHub } from '../../src/pubsub/hub.js';
import { BATCH_QUEUE } from '../batch/messages.js';
import { TOOL_RUNNER_QUEUE } from '../tool-runner/messages.js';
import { WEBHOOK_QUEUE } from '../webhook/messages.js';
import { ROUTER_PROXY_QUEUE, SessionMailbox } from './queues.js';

/** Queues, mailbox and the process's one subscriber, shared by the roles of a process. */
export interface DataPlane {
  queues: QueueFactory;
  mailbox: SessionMailbox;
  routerProxy: Queue;
  toolRunner: Queue;
  webhooks: Queue;
  batches: Queue;
  hub: PubSubHub;
}

export interface DataPlaneHost {
  log: { warn(obj: object, msg: string): void };
  redis: RedisClient;
  keys: RedisKeys;
  shutdown: ShutdownList;
  config: { sessionShards: number };
  redisFor(kind: 'worker' | 'subscriber', name: string): RedisClient;
}

const planes = new WeakMap<DataPlaneHost, DataPlane>();

/** Built once per process (per core), on first use by any role. */
export function dataPlane(core: DataPlaneHost): DataPlane {
  let plane = planes.get(core);
  if (plane) return plane;
  let reported = false;
  const queues = new QueueFactory(core.keys, core.redis, (name) => core.redisFor('worker', name), (err) => {
    if (!reported) core.log.warn({ err: err.message }, 'queue connection error');
    reported = true;
  });
  const hub = new PubSubHub(core.redisFor('subscriber', 'hub'));
  core.shutdown.add(once('queues', () => queues.close()));
  core.shutdown.add(once('pubsub-hub', () => hub.close()));
  plane = {
    queues,
    mailbox: new SessionMailbox(queues, core.config.sessionShards),
    routerProxy: queues.queue(ROUTER_PROXY_QUEUE),
    toolRunner: queues.queue(TOOL_RUNNER_QUEUE),
    webhooks: queues.queue(WEBHOOK_QUEUE),
    batches: queues.queue(BATCH_QUEUE),
    hub,
  };
  planes.set(core, plane);
  return plane;
}
