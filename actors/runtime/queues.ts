import type { JobsOptions, Queue } from 'bullmq';
import type { QueueFactory } from '../../infra/queues/queues.js';
import { shardOf } from '../../infra/queues/queues.js';
import type { SessionCommand } from '../session/messages.js';

export const ROUTER_PROXY_QUEUE = 'router-proxy';

export function sessionQueueName(shard: number): string {
  return `session-${shard}`;
}

/** Who waits for a command's outcome: a web node's reply channel and its request id. */
export interface ReplyTo {
  channel: string;
  request_id: string;
}

export interface SessionJob {
  session_id: string;
  command: SessionCommand;
  reply_to?: ReplyTo;
}

/** BullMQ priorities: lower runs first. Interactive sessions go ahead of batch work. */
export const PRIORITY = Object.freeze({ interactive: 1, batch: 10 } as const);

const JOB_DEFAULTS: JobsOptions = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 100 },
  removeOnComplete: { age: 3600, count: 50_000 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

/** BullMQ job ids may not contain ':'; ours never do, but a session id comes from outside. */
export function sessionJobId(sessionId: string, commandId: string): string {
  return `${sessionId}.${commandId}`.replace(/:/g, '_');
}

/** Sends commands to session actors: session id → shard → queue `session-<shard>`. */
export class SessionMailbox {
  constructor(
    private readonly queues: QueueFactory,
    readonly shards: number,
  ) {}

  queueFor(sessionId: string): Queue {
    return this.queues.queue(sessionQueueName(shardOf(sessionId, this.shards)));
  }

  /**
   * The job id is the command id, so a retried send is still one job. An
   * asked command adds the request id: the asker must get its own reply even
   * when the same command ran before (the ledger then answers with the
   * recorded outcome instead of applying it twice).
   */
  async send(job: SessionJob, priority: keyof typeof PRIORITY = 'interactive', delayMs?: number): Promise<void> {
    const id = sessionJobId(job.session_id, job.command.command_id);
    await this.queueFor(job.session_id).add(job.command.kind, job, {
      ...JOB_DEFAULTS,
      ...(delayMs ? { delay: delayMs } : {}),
      jobId: job.reply_to ? `${id}.${job.reply_to.request_id}` : id,
      priority: PRIORITY[priority],
    });
  }

  /** Many sends in one round trip per shard (batches). */
  async sendBulk(jobs: SessionJob[], priority: keyof typeof PRIORITY): Promise<void> {
    const byQueue = new Map<Queue, SessionJob[]>();
    for (const j of jobs) {
      const q = this.queueFor(j.session_id);
      byQueue.set(q, [...(byQueue.get(q) ?? []), j]);
    }
    await Promise.all(
      [...byQueue].map(([q, list]) =>
        q.addBulk(list.map((j) => ({ name: j.command.kind, data: j, opts: { ...JOB_DEFAULTS, jobId: sessionJobId(j.session_id, j.command.command_id), priority: PRIORITY[priority] } }))),
      ),
    );
  }
}

export { JOB_DEFAULTS };
