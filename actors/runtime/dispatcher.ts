import { Job, type JobsOptions, type Queue } from 'bullmq';
import { shardOf, type QueueFactory } from '../../src/lib/queues/queues.js';
import { isCluster } from '../../src/lib/redis/connection.js';
import { publish as publishOne, publishAll } from '../../src/lib/redis/publish.js';
import { tenantOf, type JobProbe, type JobState, type Publication } from './actor.js';
import { PRIORITY, type ActorAddress, type Send } from '../../src/domain/actors/address.js';
import { rankedPriority, type FairShare } from './fair-share.js';
import { carrierOf, startSpan, tracingOn, type TraceSpan } from '../../src/lib/telemetry/tracing.js';

/** Shard `n` of a keyed actor's queue. */
export function shardQueueName(actor: string, shard: number): string {
  return `${actor}-${shard}`;
}

interface Pipeline {
  publish(channel: string, message: string): unknown;
  exec(): Promise<[Error | null, unknown][] | null>;
}

/**
 * The queue hop's producer span, whose context the job carries in BullMQ's own telemetry field
 * (`opts.telemetry.metadata`, stored with the job as `tm`); the runtime continues it (runtime.ts). Carried in the
 * options, not the data, so no actor's message changes and a job added again under its id stays the same job.
 */
function traceSend(s: Ready): TraceSpan {
  const span = startSpan(`send ${s.to.name}`, 'producer', { 'messaging.system': 'bullmq', 'messaging.operation.type': 'send', 'messaging.destination.name': s.to.name, 'messaging.message.id': s.job_id, 'troupe.message.kind': s.name });
  const metadata = carrierOf(span);
  if (metadata) s.opts = { ...s.opts, telemetry: { metadata } };
  return span;
}

/** A send with its BullMQ options (a fair-shared send's priority is its rank among its tenant's pending jobs). */
type Ready = Send & { opts: JobsOptions };

function jobOptions(s: Send, rank?: number): JobsOptions {
  return {
    attempts: s.to.attempts,
    backoff: { type: 'exponential', delay: 100 },
    removeOnComplete: { age: 3600, count: 50_000 },
    removeOnFail: { age: 7 * 24 * 3600 },
    jobId: s.job_id,
    priority: rank === undefined ? PRIORITY[s.priority ?? 'interactive'] : rankedPriority(s.priority ?? 'interactive', rank),
    ...(s.delay_ms ? { delay: s.delay_ms } : {}),
    // BullMQ's throttle-mode deduplication: a key that outlives the job, set in the same script that adds it.
    ...(s.to.rememberMs ? { deduplication: { id: s.job_id, ttl: s.to.rememberMs } } : {}),
  };
}

/**
 * Hands messages to actors' queues. Everything a turn hands off (its pub/sub
 * notifications and every job it sends, to any queue) goes out in one
 * pipeline: one Redis round trip however many effects a turn has. Built once
 * per process by the composition root; web nodes use it to ask and to wake.
 */
export class Dispatcher implements JobProbe {
  constructor(
    private readonly queues: QueueFactory,
    readonly shards: number,
    /** Ranks the jobs of fair-shared addresses; without it they run first come first served. */
    readonly fair: FairShare | null = null,
  ) {}

  /**
   * Each send's options. A fair-shared send costs one more round trip per
   * tenant, before the jobs are added. If that fails the jobs go out
   * unranked: fairness must not fail a message.
   */
  private async ready(sends: readonly Send[]): Promise<Ready[]> {
    const groups = new Map<string, { to: ActorAddress; tenant: string; at: number[] }>();
    sends.forEach((s, i) => {
      const tenant = this.fair ? tenantOf(s.to, s.data) : null;
      if (tenant === null) return;
      const id = `${s.to.name}\n${tenant}`;
      const g = groups.get(id) ?? { to: s.to, tenant, at: [] };
      g.at.push(i);
      groups.set(id, g);
    });
    const ranks = new Map<number, number>();
    await Promise.all(
      [...groups.values()].map(async (g) => {
        const got = await this.fair!.note(g.to.name, g.tenant, g.at.map((i) => sends[i].job_id)).catch(() => null);
        got?.forEach((rank, k) => ranks.set(g.at[k], rank));
      }),
    );
    return sends.map((s, i) => ({ ...s, opts: jobOptions(s, ranks.get(i)) }));
  }

  queueOf(to: ActorAddress, key?: string): Queue {
    if (!to.keyed) return this.queues.queue(to.name);
    if (key === undefined) throw new Error(`a message to keyed actor ${to.name} needs a key`);
    return this.queues.queue(shardQueueName(to.name, shardOf(key, this.shards)));
  }

  async state(job: Pick<Send, 'to' | 'key' | 'job_id'>): Promise<JobState | null> {
    const found = await this.queueOf(job.to, job.key).getJob(job.job_id);
    return found ? ((await found.getState()) as JobState) : null;
  }

  async remove(job: Pick<Send, 'to' | 'key' | 'job_id'>): Promise<void> {
    await (await this.queueOf(job.to, job.key).getJob(job.job_id))?.remove();
  }

  send(sends: Send[]): Promise<void> {
    return this.deliver([], sends);
  }

  /** Publishes, then adds the jobs, in one round trip (one pipeline, or the lone command); throws if any part failed (job ids make a retry safe). */
  async deliver(publish: readonly Publication[], unranked: readonly Send[]): Promise<void> {
    if (!publish.length && !unranked.length) return;
    // Only a send to a fair-shared address waits for its rank; every other delivery goes out as before.
    const sends = this.fair && unranked.some((s) => s.to.shareBy) ? await this.ready(unranked) : unranked.map((s) => ({ ...s, opts: jobOptions(s) }));
    if (!tracingOn() || !sends.length) return this.deliverReady(publish, sends);
    const spans = sends.map(traceSend);
    try {
      await this.deliverReady(publish, sends);
    } catch (e) {
      for (const span of spans) span.fail((e as Error).message);
      throw e;
    } finally {
      for (const span of spans) span.end();
    }
  }

  private async deliverReady(publish: readonly Publication[], sends: Ready[]): Promise<void> {
    if (isCluster(this.queues.producer)) return this.deliverSharded(publish, sends);
    // A lone command (a web node's ask, an early reply, an activity's answer) goes without a pipeline: ioredis
    // builds each pipeline by copying every script BullMQ defined on the connection, about 5% of a web process's CPU.
    if (publish.length + sends.length === 1) return this.deliverOne(publish[0], sends[0]);
    const queues = sends.map((s) => this.queueOf(s.to, s.key));
    // Every queue shares the producer connection; a queue's client resolves once BullMQ's scripts are loaded on it.
    const clients = await Promise.all([...new Set(queues)].map((q) => q.getBackend().client));
    // BullMQ's wrapped pipeline runs its scripts by name; it is the connection's own ioredis pipeline underneath.
    const pipe = (clients[0]?.pipeline() ?? this.queues.producer.pipeline()) as unknown as Pipeline;
    for (const p of publish) pipe.publish(p.channel, p.payload);
    const added = sends.map((s, i) => new Job(queues[i], s.name, s.data, s.opts, s.job_id).addJob(pipe as unknown as Parameters<Job['addJob']>[0]));
    // Observed so that a failed add is not an unhandled rejection; its error also shows in exec's results.
    const settled = Promise.allSettled(added);
    const results = (await pipe.exec()) ?? [];
    const failed = results.find(([err]) => err);
    if (failed) throw failed[0];
    for (const r of await settled) if (r.status === 'rejected') throw r.reason;
  }

  private async deliverOne(publication: Publication | undefined, send: Ready | undefined): Promise<void> {
    if (publication) {
      await publishOne(this.queues.producer, publication.channel, publication.payload);
      return;
    }
    const queue = this.queueOf(send!.to, send!.key);
    await new Job(queue, send!.name, send!.data, send!.opts, send!.job_id).addJob(await queue.getBackend().client);
  }

  /**
   * On a Redis Cluster one pipeline may only touch one node, and a turn's
   * channels and queues live on different slots: one pipeline per channel
   * (its messages stay in order, published with SPUBLISH) and one per queue,
   * side by side. Publications still go out before the jobs are added.
   */
  private async deliverSharded(publish: readonly Publication[], sends: readonly Ready[]): Promise<void> {
    const channels = new Map<string, string[]>();
    for (const p of publish) channels.set(p.channel, [...(channels.get(p.channel) ?? []), p.payload]);
    await Promise.all([...channels].map(([channel, messages]) => publishAll(this.queues.producer, channel, messages)));
    const byQueue = new Map<Queue, Ready[]>();
    for (const s of sends) {
      const q = this.queueOf(s.to, s.key);
      byQueue.set(q, [...(byQueue.get(q) ?? []), s]);
    }
    await Promise.all(
      [...byQueue].map(async ([queue, group]) => {
        const pipe = (await queue.getBackend().client).pipeline() as unknown as Pipeline;
        const added = group.map((s) => new Job(queue, s.name, s.data, s.opts, s.job_id).addJob(pipe as unknown as Parameters<Job['addJob']>[0]));
        const settled = Promise.allSettled(added);
        const failed = ((await pipe.exec()) ?? []).find(([err]) => err);
        if (failed) throw failed[0];
        for (const r of await settled) if (r.status === 'rejected') throw r.reason;
      }),
    );
  }
}
