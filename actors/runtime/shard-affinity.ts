import type { Worker } from 'bullmq';
import type { RedisClient } from '../../src/lib/redis/connection.js';
import { RepeatedErrors } from '../../src/lib/log/repeated-errors.js';
import type { Membership } from './membership.js';
import { ownedShards } from './rendezvous.js';

/** How long a shutting-down process spends waking the shards it handed over. */
const HAND_OVER_MS = 1_000;

export interface AffinityOptions {
  /** Wakes a shard handed over (its marker). */
  redis: RedisClient;
  /** The live worker processes, this one among them while it can run its shards. */
  membership: Membership;
  /** Shards per keyed actor (the dispatcher's count). */
  shards: number;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
}

interface ShardWorker {
  worker: Worker;
  shard: number;
  /** Pauses and resumes of one worker run in order: a resume never overtakes the pause before it. */
  queue: Promise<void>;
  /** Whether this process should be taking this shard's jobs. */
  wanted: boolean;
}

/**
 * Shard affinity: the shard queues of keyed actors are split over the live
 * worker processes by rendezvous hashing, and each process runs the BullMQ
 * workers of its own shards only, so a session's turns stay in one process
 * (its cache stays warm, its writes group-commit together) while membership
 * is stable. Shard `n` of every keyed actor goes to the same process.
 *
 * Correctness never rests on this: each shard queue has global concurrency 1
 * (ShardGuard) and the ledger's sequence fence refuses a second writer, so
 * two processes running one shard during a change (one still finishing its
 * turn, or a Redis hiccup leaving each with its last assignment) only cost
 * cache misses. A process that sees no member list keeps its assignment; one
 * alone owns every shard.
 *
 * A shard is paused with BullMQ's waiting pause: it stops the stalled
 * checker, cuts the blocking BZPOPMIN at once (and reconnects it, idle), and
 * lets the running turn finish; from then on the shard costs this process no
 * Redis command. The do-not-wait pause would leave the main loop in BZPOPMIN
 * for up to `drainDelay` (5 s), taking the shard's next jobs meanwhile. The
 * owner's stalled checker starts on resume and takes over a dead member's
 * job once its lock lapses.
 *
 * A shard changes hands while its old owner may still run a turn there, and a
 * job queued meanwhile leaves the queue no marker (the shard is at its global
 * concurrency of 1), nor does that turn's end when its worker is pausing or
 * closing (it fetches nothing next). The new owner, having found the shard busy
 * (or having drained it in an earlier ownership), waits on the marker, up to
 * `drainDelay` (5 s), before it looks again. So the old owner wakes the shard
 * once its last turn there has ended: after a pause, and on shutdown after its
 * workers closed (`handOver`).
 */
export class ShardAffinity {
  private readonly workers: ShardWorker[] = [];
  private readonly wakeErrors = new RepeatedErrors((obj, msg) => this.opts.log.warn(obj, msg), 'could not wake a shard handed over');
  private owned: Set<number> | null = null;
  private joined: Promise<void> | null = null;

  constructor(private readonly opts: AffinityOptions) {}

  /** This process's member id; its shard workers are named after it. */
  get id(): string {
    return this.opts.membership.id;
  }

  /**
   * Adds one shard's worker, created with `autorun: false`; it runs once
   * this process owns the shard. The first call joins the membership (one
   * beat), so the first assignment comes from the live list.
   */
  async add(shard: number, worker: Worker): Promise<void> {
    const entry: ShardWorker = { worker, shard, queue: Promise.resolve(), wanted: false };
    this.workers.push(entry);
    this.joined ??= this.opts.membership.join((members) => this.assign(members)).then(() => {
      // Redis did not answer the first beat: alone as far as this process knows, so it runs every shard.
      if (!this.owned) this.assign([]);
    });
    await this.joined;
    if (this.owned) this.steer(entry, this.owned.has(shard));
  }

  /** The shards this process runs now (tests and logs). */
  ownedShards(): number[] {
    return [...(this.owned ?? [])].sort((a, b) => a - b);
  }

  private assign(members: string[]): void {
    // Stepped out (the list lacks this process): the others run every shard. Alone, it keeps them all: nobody can do better.
    const owned = members.length && !members.includes(this.id) ? new Set<number>() : ownedShards(this.id, members, this.opts.shards);
    const moved = this.owned ? [...owned].filter((s) => !this.owned!.has(s)).length + [...this.owned].filter((s) => !owned.has(s)).length : owned.size;
    this.owned = owned;
    for (const w of this.workers) this.steer(w, owned.has(w.shard));
    this.opts.log.info({ member: this.id, members: members.length, moved, shards: this.ownedShards() }, 'shard assignment');
  }

  private steer(w: ShardWorker, wanted: boolean): void {
    if (w.wanted === wanted) return;
    w.wanted = wanted;
    // resume() also starts a worker that never ran, or wakes a main loop still winding down from a pause.
    w.queue = w.queue
      .then(() => (wanted ? w.worker.resume() : w.worker.pause().then(() => this.wake(w.worker))))
      .catch((err: Error) => this.opts.log.error({ err: err.message, queue: w.worker.name }, 'could not steer a shard worker'));
  }

  /** Leaves the membership first, so the others take these shards on their next beat; the workers are closed by the caller. */
  async leave(): Promise<void> {
    await this.opts.membership.leave();
  }

  /**
   * After `leave` and the workers' close: wakes the shards this process ran, whose new owners may wait on them.
   * Bounded, so that a shutdown with Redis away is not held up by it.
   */
  async handOver(): Promise<void> {
    const wakes = Promise.allSettled(this.workers.filter((w) => w.wanted).map((w) => this.wake(w.worker)));
    await Promise.race([wakes, new Promise((r) => setTimeout(r, HAND_OVER_MS).unref())]);
  }

  /**
   * BullMQ's base marker (as a job added to an idle queue leaves): the owner's
   * blocking wait returns and it fetches. With nothing queued it fetches
   * nothing and waits again, one round trip.
   */
  private async wake(worker: Worker): Promise<void> {
    try {
      await this.opts.redis.zadd(worker.keys.marker, 0, '0');
    } catch (err) {
      // The new owner then looks by itself within drainDelay. Once per message per window: with Redis away every
      // shard fails alike, and a Ctrl-C of `npm start` printed one line per shard (64).
      this.wakeErrors.report((err as Error).message, worker.name);
    }
  }
}
