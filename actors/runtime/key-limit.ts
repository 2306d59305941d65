import type { Queue } from 'bullmq';
import type { RedisClient } from '../../src/lib/redis/connection.js';

/**
 * Takes a slot (KEYS[1], a sorted set: job id → lease end) if the key has
 * one free, or adds the job to the key's waiters (KEYS[2]: job id → when it
 * first waited). Expired leases (a process that died holding a slot) are
 * dropped first. A job that already holds a slot (taken over after a stall)
 * keeps it. Redis's clock, so processes' clocks need not agree.
 */
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  redis.call('ZREM', KEYS[2], ARGV[1])
  return 1
end
redis.call('ZADD', KEYS[2], 'NX', now, ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 0`;

/** Frees a job's slot (if it still holds one) and names the longest waiter, taken off the waiters. */
const RELEASE = `
redis.call('ZREM', KEYS[1], ARGV[1])
local next = redis.call('ZPOPMIN', KEYS[2])
return next[1] or false`;

/** Takes the next waiter alone (the one named on release had moved on). */
const NEXT = `
local next = redis.call('ZPOPMIN', KEYS[1])
return next[1] or false`;

/** A waiter is woken when a slot frees; this is only the fallback (a wake-up lost to a crash or a race). */
const PARK_MS = 10_000;
/** Waiters named on release that had moved on before one is found that is parked. */
const WAKE_TRIES = 3;

export interface KeyLimitOptions {
  redis: RedisClient;
  /** The job's queue (to wake a parked job). */
  queue: Queue;
  /** The Redis keys of one key's slots and waiters (one hash slot, so the scripts run on a Redis Cluster). */
  keys(key: string): { held: string; waiting: string };
  limit: number;
  /** How long a slot is held at most: a dead process's slot frees after this. */
  leaseMs: number;
}

/**
 * At most `limit` jobs with one key run at once, across every process.
 * A job that finds its key full is parked (moved to delayed, so it stays
 * durable in its queue and holds no worker slot) and woken, oldest first,
 * when a slot frees; a parked job also wakes on its own after PARK_MS, so a
 * lost wake-up only delays it. Jobs of other keys are never held back.
 */
export class KeyLimit {
  constructor(private readonly opts: KeyLimitOptions) {}

  /** True when the job may run now (it then holds a slot until `release`). */
  async acquire(key: string, jobId: string): Promise<boolean> {
    const k = this.opts.keys(key);
    const got = await this.opts.redis.eval(ACQUIRE, 2, k.held, k.waiting, jobId, this.opts.limit, this.opts.leaseMs, 24 * 3600_000);
    return got === 1;
  }

  /** When a parked job wakes on its own; jittered so a key's waiters do not all wake together. */
  parkUntil(now = Date.now()): number {
    return now + Math.round(PARK_MS * (1 + 0.5 * Math.random()));
  }

  /** Frees the slot and wakes the longest waiter that is parked. */
  async release(key: string, jobId: string): Promise<void> {
    const k = this.opts.keys(key);
    let next = (await this.opts.redis.eval(RELEASE, 2, k.held, k.waiting, jobId)) as string | null;
    for (let i = 0; next && i < WAKE_TRIES; i++) {
      if (await this.wake(next)) return;
      next = (await this.opts.redis.eval(NEXT, 1, k.waiting)) as string | null;
    }
  }

  /** Moves a parked job to waiting; false when it is not parked (it ran, or is between its look and its parking). */
  private async wake(jobId: string): Promise<boolean> {
    try {
      await this.opts.queue.getJob(jobId).then((j) => (j ? j.promote() : Promise.reject(new Error('gone'))));
      return true;
    } catch {
      return false;
    }
  }
}
