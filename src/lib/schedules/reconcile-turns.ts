import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../redis/connection.js';

/** A scanning process's lease: long enough to outlive a slow page, short enough that a start waiting on a dead holder takes over soon. */
const LEASE_MS = 30_000;
const RENEW_MS = 10_000;
const DONE = 'done';

// Takes the lease (ARGV[1] token, ARGV[2] lease ms) or tells what holds the key: {1} ours, {2} done in the window,
// {3, ms left} another process's lease (0 when it expired between the two calls: ask again).
const TAKE = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {1, 0} end
if redis.call('GET', KEYS[1]) == '${DONE}' then return {2, 0} end
local left = redis.call('PTTL', KEYS[1])
if left < 0 then left = 0 end
return {3, left}`;
// Only the lease's own holder extends or drops it: never another's lease, never the done marker.
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/**
 * Whose turn it is to reconcile the schedules, held in one Redis key: a lease (a token, renewed while the scan runs)
 * taken with SET NX, replaced by a done marker that lives `windowMs` once the scan finished. A holder that dies stops
 * renewing, so its lease expires and a start waiting on it takes over; the marker is written only after a whole scan.
 */
export class RedisReconcileTurns {
  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
    private readonly windowMs: number,
  ) {}

  /** As app/schedules/reconcile.ts's ReconcileTurns port: 'ours' (scan, then finish or release), 'done', or 'held'. */
  async take(): Promise<{ state: 'ours'; finish(): Promise<void>; release(): Promise<void> } | { state: 'done' } | { state: 'held'; leftMs: number }> {
    const token = randomUUID();
    const [state, left] = (await this.redis.eval(TAKE, 1, this.key, token, LEASE_MS)) as [number, number];
    if (state === 2) return { state: 'done' };
    if (state === 3) return { state: 'held', leftMs: left };
    const renew = setInterval(() => {
      this.redis.eval(RENEW, 1, this.key, token, LEASE_MS).catch(() => undefined); // a missed renewal only risks a second scan
    }, RENEW_MS);
    renew.unref();
    return {
      state: 'ours',
      finish: async () => {
        clearInterval(renew);
        await this.redis.set(this.key, DONE, 'PX', this.windowMs);
      },
      release: async () => {
        clearInterval(renew);
        await this.redis.eval(RELEASE, 1, this.key, token);
      },
    };
  }
}
