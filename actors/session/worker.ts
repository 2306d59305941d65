import type { Job, Worker } from 'bullmq';
import { TroupeError } from '../../src/domain/errors.js';
import { once } from '../../src/lifecycle/shutdown.js';
import type { Core } from '../../src/roles/core.js';
import { dataPlane } from '../runtime/data-plane.js';
import { sessionQueueName, type SessionJob } from '../runtime/queues.js';
import type { ReplyBody } from '../runtime/asker.js';
import { VersionCache } from './agent-context.js';
import { SessionCache } from './session-cache.js';
import { runTurn, type TurnDeps } from './turn.js';

/**
 * Session actors: one BullMQ worker per shard queue, each queue with global
 * concurrency 1, so a session's commands never run concurrently anywhere in
 * the cluster. Any number of worker processes share all shards.
 */
export async function startSessionActors(core: Core, lockDurationMs: number): Promise<void> {
  const plane = dataPlane(core);
  const agents = core.stores.agents;
  const deps: TurnDeps = {
    sessions: core.stores.sessions,
    ledger: core.stores.ledger,
    messages: core.stores.messages,
    publisher: core.redis,
    keys: core.keys,
    mailbox: plane.mailbox,
    routerProxy: plane.routerProxy,
    toolRunner: plane.toolRunner,
    webhooks: plane.webhooks,
    batches: plane.batches,
    versions: new VersionCache((org, id) => agents.getVersion(org, id)),
    publicUrl: core.config.publicUrl,
    cache: new SessionCache(),
    idempotency: core.stores.idempotency,
  };
  const reply = async (job: SessionJob, msg: ReplyBody) => {
    if (job.reply_to) await core.redis.publish(job.reply_to.channel, JSON.stringify({ ...msg, request_id: job.reply_to.request_id }));
  };
  const processor = async (job: Job<SessionJob>) => {
    try {
      const value = await runTurn(deps, job.data);
      await reply(job.data, { ok: true, value });
    } catch (err) {
      // A domain error is the command's answer and is never retried.
      if (!(err instanceof TroupeError)) throw err;
      await reply(job.data, { ok: false, status: err.status, error: err.toBody() });
    }
  };
  const workers: Worker[] = [];
  for (let shard = 0; shard < core.config.sessionShards; shard++) {
    const name = sessionQueueName(shard);
    await plane.queues.queue(name).setGlobalConcurrency(1);
    const w = plane.queues.worker<SessionJob, void>(name, processor, { concurrency: 1, lockDuration: lockDurationMs, stalledInterval: Math.max(1000, lockDurationMs / 2) });
    w.on('failed', (job, err) => {
      core.log.warn({ err: err.message, job: job?.id, attempts: job?.attemptsMade }, 'session turn failed');
      if (job && job.attemptsMade >= (job.opts.attempts ?? 1)) {
        void reply(job.data, { ok: false, status: 503, error: { type: 'service_unavailable', code: 'turn_failed', message: 'The session could not process the command; retry.' } });
      }
    });
    w.on('error', (err) => core.log.error({ err: err.message, queue: name }, 'session worker error'));
    workers.push(w);
  }
  core.shutdown.add(once('session-actors', async () => void (await Promise.allSettled(workers.map((w) => w.close())))));
  core.log.info({ shards: core.config.sessionShards }, 'session actors started');
}
