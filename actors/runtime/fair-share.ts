import type { RedisClient } from '../../src/lib/redis/connection.js';
import { PRIORITY, type Priority } from '../../src/domain/actors/address.js';

/**
 * Notes a tenant's new jobs among its pending ones (KEYS[1], a sorted set:
 * job id → when it was sent) and returns each one's rank: how many of the
 * tenant's jobs are pending with it. A job already noted (a repeated send,
 * deduplicated by its id) is not counted twice. Members older than ARGV[1]
 * ms are dropped first: a job removed without finishing (the stranded-work
 * sweeper) must not weigh on its tenant forever.
 */
const NOTE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))
local ranks = {}
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'NX', now, ARGV[i])
  ranks[#ranks + 1] = redis.call('ZCARD', KEYS[1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return ranks`;

/** A pending job is forgotten after this (a tool call runs for an hour at most, and waits in its queue). */
const FORGET_MS = 24 * 3600_000;
/** BullMQ priorities go up to 2^21; batch ranks sit above every interactive one. */
const BATCH_BASE = 1_000_000;
const MAX_RANK = BATCH_BASE - 1;

export interface FairShareOptions {
  redis: RedisClient;
  /** The Redis key of one tenant's pending jobs of one actor. */
  key(actor: string, tenant: string): string;
}

/**
 * Round-robin between tenants on one unkeyed actor's queue, across every
 * process. A job's BullMQ priority is its rank among its tenant's pending
 * jobs (within its priority class), so the k-th waiting job of every tenant
 * runs before any tenant's (k+1)-th: a tenant with 10,000 queued calls holds
 * back another's first call by at most one call per tenant. The rank is
 * fixed when the job is sent; a job leaves its tenant's count when it
 * finishes for good (`done`).
 */
export class FairShare {
  constructor(private readonly opts: FairShareOptions) {}

  /** The ranks of a tenant's new jobs, in the order given. */
  async note(actor: string, tenant: string, jobIds: string[]): Promise<number[]> {
    return (await this.opts.redis.eval(NOTE, 1, this.opts.key(actor, tenant), FORGET_MS, ...jobIds)) as number[];
  }

  /** The job finished (or was given up): it no longer counts for its tenant. */
  async done(actor: string, tenant: string, jobId: string): Promise<void> {
    await this.opts.redis.zrem(this.opts.key(actor, tenant), jobId);
  }

  /** The tenant's pending jobs (tests and metrics). */
  pending(actor: string, tenant: string): Promise<number> {
    return this.opts.redis.zcard(this.opts.key(actor, tenant));
  }
}

/** The BullMQ priority of a job of class `cls` with rank `rank` among its tenant's pending jobs. */
export function rankedPriority(cls: Priority, rank: number): number {
  return (PRIORITY[cls] === PRIORITY.batch ? BATCH_BASE : 0) + Math.max(1, Math.min(MAX_RANK, rank));
}
