import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { RedisClient } from '../../src/lib/redis/connection.js';

/** Heartbeat every second, gone after three missed: a killed worker's shards move within ~4 s, inside the 10 s failover bound with the lock's lapse. */
export const HEARTBEAT_MS = 1_000;
export const LAPSE_MS = 3_000;

/**
 * One heartbeat, one round trip, one key (so it runs on a Redis Cluster too):
 * stamp this member with Redis's own clock (processes on different hosts need
 * not agree on the time), drop members whose stamp lapsed, return the rest.
 * The set expires by itself once every member is gone.
 */
const BEAT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 10)
return redis.call('ZRANGE', KEYS[1], 0, -1)
`;

/** A beat of a member that cannot do its work: out of the set (the others take its shards on their next beat), the rest read. */
const STEP_OUT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
return redis.call('ZRANGE', KEYS[1], 0, -1)
`;

export interface MembershipOptions {
  redis: RedisClient;
  /** The sorted set of live members (member → last heartbeat, Redis time in ms). */
  key: string;
  /** How often this member stamps itself and reads the others (HEARTBEAT_MS). */
  heartbeatMs?: number;
  /** A member not heard from for this long is gone (LAPSE_MS). */
  lapseMs?: number;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  /**
   * Whether this process can do its shards' work now (its MongoDB answers).
   * While it cannot, each beat takes it out of the set instead of stamping
   * it, so the others run its shards; it is back on the first beat it can.
   * A worker cut off from MongoDB but not from Redis would otherwise keep
   * renewing its locks and hold its sessions.
   */
  fit?: () => boolean;
}

/** Called with the live members (by their last stamp) whenever they differ from the last list seen; without this process while it is stepped out. */
export type MembersSeen = (members: string[]) => void;

/**
 * The live worker processes, from heartbeats in Redis. A beat that fails
 * (a Redis hiccup) changes nothing: the caller keeps what it last saw, and
 * the next beat tries again.
 */
export class Membership {
  /** This process's member id, unique per runtime; BullMQ records it as each job's `processedBy`. */
  readonly id = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private timer: NodeJS.Timeout | null = null;
  private last = '';
  private failing = false;
  private beating: Promise<void> | null = null;
  private left = false;
  private steppedOut = false;
  private onChange: MembersSeen = () => undefined;

  constructor(private readonly opts: MembershipOptions) {}

  /** Joins (the first beat, awaited so the caller starts from a real list when Redis answers) and keeps beating. */
  async join(onChange: MembersSeen): Promise<void> {
    this.onChange = onChange;
    await this.beat();
    if (this.left || this.timer) return;
    this.timer = setInterval(() => void this.beat(), this.opts.heartbeatMs ?? HEARTBEAT_MS);
    // Beats must not keep a process alive that is otherwise done.
    this.timer.unref();
  }

  private beat(): Promise<void> {
    // One beat at a time: a slow Redis must not pile them up.
    this.beating ??= this.beatOnce().finally(() => (this.beating = null));
    return this.beating;
  }

  private async beatOnce(): Promise<void> {
    const { redis, key, lapseMs = LAPSE_MS, log } = this.opts;
    const id = this.id;
    const fit = this.opts.fit?.() ?? true;
    try {
      const members = (await redis.eval(fit ? BEAT : STEP_OUT, 1, key, id, String(lapseMs))) as string[];
      if (this.left) return;
      if (this.failing) log.info({ member: id }, 'worker membership heartbeat works again');
      this.failing = false;
      if (this.steppedOut === fit) {
        if (fit) log.info({ member: id }, 'MongoDB answers again: back in the worker membership');
        else log.warn({ member: id, others: members.length }, 'MongoDB does not answer: stepped out of the worker membership, so the other workers run its shards');
        this.steppedOut = !fit;
      }
      const seen = members.join('\n');
      if (seen === this.last) return;
      this.last = seen;
      this.onChange(members);
    } catch (err) {
      if (!this.failing) log.warn({ member: id, err: (err as Error).message }, 'worker membership heartbeat failed; keeping the last shard assignment');
      this.failing = true;
    }
  }

  /** Leaves at once (a graceful shutdown), so the others take this member's shards on their next beat, not after the lapse. */
  async leave(): Promise<void> {
    if (this.left) return;
    this.left = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.beating?.catch(() => undefined);
    try {
      await this.opts.redis.zrem(this.opts.key, this.id);
      this.opts.log.info({ member: this.id }, 'left the worker membership');
    } catch (err) {
      this.opts.log.warn({ member: this.id, err: (err as Error).message }, 'could not leave worker membership; the others take over once its heartbeat lapses');
    }
  }
}
