import { DelayedError, type Job, type Worker } from 'bullmq';
import { ensureError, TroupeError } from '../../src/domain/errors.js';
import type { QueueFactory } from '../../src/lib/queues/queues.js';
import { tenantOf, type ActorContext, type ActorDefinition, type Outcome, type Publication } from './actor.js';
import { PRIORITY, type ReplyTo } from '../../src/domain/actors/address.js';
import { BatchGate } from './batch-gate.js';
import { KeyLimit } from './key-limit.js';
import type { RedisKeys } from '../../src/lib/redis/keys.js';
import type { Asked, ReplyBody } from './asker.js';
import { shardQueueName, type Dispatcher } from './dispatcher.js';
import { ShardAffinity } from './shard-affinity.js';
import type { Membership } from './membership.js';
import { RepeatedErrors } from '../../src/lib/log/repeated-errors.js';
import { ShardGuard } from './shard-guard.js';
import { NO_OBSERVER, type TurnObserver, type TurnResult } from './observer.js';
import { closeWorkers, RunningTurns } from './worker-close.js';
import { inJobContext, traceJob } from './trace-job.js';

export interface RuntimeLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface RuntimeOptions {
  queues: QueueFactory;
  dispatcher: Dispatcher;
  log: RuntimeLog;
  /**
   * How long a job's lock lasts; BullMQ renews it at half that while the
   * handler runs. A killed worker's jobs are taken over once it lapses, so
   * this bounds failover.
   */
  lockMs: number;
  observer?: TurnObserver;
  /** Batch-priority messages of gated actors this process handles at once (BatchGate); 0 or absent = no bound. */
  batchSlots?: number;
  /**
   * The worker membership: with it, keyed actors' shards are split over the
   * live processes (ShardAffinity); without it, this process runs every shard.
   */
  membership?: Membership;
  /** Names the Redis keys of per-key limits; needed by actors started with `perKeyLimit`. */
  keys?: Pick<RedisKeys, 'keyLimit'>;
  /**
   * How many times a message may stall (its worker died, or froze and let its lock lapse) before it is
   * quarantined instead of run again: poison work. Default DEFAULT_POISON_STALLS.
   */
  poisonStalls?: number;
}

export const DEFAULT_POISON_STALLS = 3;

/** The error a quarantined message ends with (`processing_budget_exceeded`, the code first, as clients match it). */
export function budgetExceeded(what: string): string {
  return `processing_budget_exceeded: processing this message ${what}; it was stopped and will not run again.`;
}

export interface StartOptions {
  /** Messages handled at once per process (unkeyed actors; keyed actors run one per shard). */
  concurrency?: number;
  /** A longer lock for handlers that legitimately wait long (webhook attempts). */
  lockMs?: number;
  /**
   * Whether this actor's batch-priority messages share the process's batch
   * slots (default true). Off for actors that wait on the outside world (a
   * model call, a tool run): a slot held for seconds would stall the drain
   * without using the process.
   */
  gateBatch?: boolean;
  /** With the actor's `limitKey`: messages of one key running at once, across every process (0/absent = no cap). */
  perKeyLimit?: number;
  /**
   * How long one message's handler may run (0/absent = no bound). Past it the message is quarantined
   * (onQuarantine) and the queue moves on; the handler, which cannot be stopped, is left to end on its own.
   * For actors whose handlers never wait on the outside (the session turn): a keyed actor runs one message per
   * shard, so a handler that never returns would stop every session of its shard.
   */
  budgetMs?: number;
}

/** A handler that ran past its actor's budget (StartOptions.budgetMs). */
class BudgetExceeded extends Error {
  override name = 'BudgetExceeded';
}

/** The handler's outcome, or BudgetExceeded once `ms` have passed (no bound when ms is 0). */
function withinBudget<T>(work: Promise<T>, ms: number): Promise<T> {
  if (!ms) return work;
  let timer: NodeJS.Timeout | undefined;
  const over = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new BudgetExceeded(`ran past its ${ms} ms budget`)), ms)));
  return Promise.race([work, over]).finally(() => clearTimeout(timer));
}

/** How often a worker looks whether an interactive message waits behind a shard whose batch turn waits for a slot. */
const INHERIT_EVERY_MS = 100;

interface Early {
  part: Pick<Outcome, 'reply' | 'publish' | 'sends'> | null;
  /** Resolves true once the part went out, false if it could not. */
  sent: Promise<boolean> | null;
}

/** An early part that did not go out, delivered with what the handler returned: publications and sends in order. */
function withEarly(part: Pick<Outcome, 'reply' | 'publish' | 'sends'>, rest: Outcome): Outcome {
  return { ...rest, reply: part.reply, publish: [...(part.publish ?? []), ...(rest.publish ?? [])], sends: [...(part.sends ?? []), ...(rest.sends ?? [])] };
}

function replyOf(to: ReplyTo | undefined, body: ReplyBody): Publication[] {
  return to ? [{ channel: to.channel, payload: JSON.stringify({ ...body, request_id: to.request_id }) }] : [];
}

/**
 * Hosts actors: one BullMQ worker per queue (per shard for keyed actors),
 * locks and stalled-job takeover, retries, the reply to an asker, and the
 * hand-off of what a handler decided. Imports no specific actor: the
 * composition root starts each definition with its ports.
 */
export class ActorRuntime {
  private readonly workers: Worker[] = [];
  private readonly stopping = new AbortController();
  private readonly observer: TurnObserver;
  private readonly guard: ShardGuard;
  /** One line per distinct worker error per window, however many shard workers see it. */
  private readonly workerErrors: RepeatedErrors;
  /** Which shards this process runs, when shards are split over processes. */
  readonly affinity: ShardAffinity | null;
  readonly batchGate: BatchGate;
  /** Shard queues of keyed actors: a batch turn waiting for a slot there holds the shard. */
  private readonly shardQueues = new Set<string>();
  /** Handlers running now: closing waits for them, however Redis fares. */
  private readonly turns = new RunningTurns();
  private readonly inheritTimer: NodeJS.Timeout | null;
  private inheriting = false;
  private closing: Promise<void> | null = null;
  private readonly poisonStalls: number;

  constructor(private readonly opts: RuntimeOptions) {
    this.observer = opts.observer ?? NO_OBSERVER;
    this.poisonStalls = opts.poisonStalls ?? DEFAULT_POISON_STALLS;
    this.guard = new ShardGuard(opts.queues.producer, opts.log);
    this.workerErrors = new RepeatedErrors((obj, msg) => opts.log.error(obj, msg), 'actor worker error');
    this.batchGate = new BatchGate(opts.batchSlots ?? 0);
    this.affinity = opts.membership ? new ShardAffinity({ redis: opts.queues.producer, membership: opts.membership, shards: opts.dispatcher.shards, log: opts.log }) : null;
    // Without a bound no batch turn ever waits for a slot: nothing to look at.
    this.inheritTimer = this.batchGate.slots > 0 ? setInterval(() => void this.inheritPriority(), INHERIT_EVERY_MS) : null;
    this.inheritTimer?.unref();
  }

  /**
   * Priority inheritance: a batch turn that waits for a slot holds its shard
   * (one turn per shard at a time), so an interactive message queued on that
   * shard would wait for the batch turn's slot too. Such a batch turn runs at
   * once. One look per shard with a waiting batch turn, only while any waits.
   */
  private async inheritPriority(): Promise<void> {
    const held = [...this.batchGate.waitingQueues()].filter((q) => this.shardQueues.has(q));
    if (this.inheriting || !held.length) return;
    this.inheriting = true;
    try {
      const counts = await Promise.all(held.map((q) => this.opts.queues.queue(q).getCountsPerPriority([PRIORITY.interactive])));
      held.forEach((q, i) => (counts[i][PRIORITY.interactive] ?? 0) > 0 && this.batchGate.admit(q));
    } catch (err) {
      this.opts.log.warn({ err: ensureError(err).message }, 'could not look for interactive messages behind batch turns');
    } finally {
      this.inheriting = false;
    }
  }

  async start<M extends object, P>(def: ActorDefinition<M, P>, ports: P, start: StartOptions = {}): Promise<void> {
    const names = def.address.keyed ? Array.from({ length: this.opts.dispatcher.shards }, (_, i) => shardQueueName(def.address.name, i)) : [def.address.name];
    if (def.address.keyed) await this.guard.keep(names.map((n) => this.opts.queues.queue(n)));
    const lockMs = start.lockMs ?? this.opts.lockMs;
    const gated = start.gateBatch ?? true;
    // A keyed actor's shard workers start paused and run once this process owns their shard.
    const affinity = def.address.keyed ? this.affinity : null;
    const limit = this.keyLimit(def, names, lockMs, start.perKeyLimit ?? 0);
    for (const [shard, name] of names.entries()) {
      if (def.address.keyed) this.shardQueues.add(name);
      const budgetMs = start.budgetMs ?? 0;
      const run = (job: Job<M & Asked>, token?: string) => (limit ? this.limited(limit, def, ports, job, token) : this.process(def, ports, job, token, budgetMs));
      const worker = this.opts.queues.worker<M & Asked, void>(name, (job, token) =>
        traceJob(def.address.name, job, () => this.turns.run(() => (gated && job.opts.priority === PRIORITY.batch ? this.batchGate.run(name, () => run(job, token)) : run(job, token)))), {
        concurrency: def.address.keyed ? 1 : (start.concurrency ?? 1),
        lockDuration: lockMs,
        // A stalled job is moved back once seen stalled on two checks with its lock gone: lock + one interval.
        stalledInterval: Math.max(500, Math.min(lockMs / 2, 30_000)),
        // Handlers are idempotent, so a job taken over several times (a busy host missing renewals) is retried, not
        // lost, until it has stalled poisonStalls times and is quarantined (process). BullMQ's own cap, past that,
        // gives a quarantine that stalls itself two more tries before the job fails for good.
        maxStalledCount: this.poisonStalls + 2,
        ...(affinity ? { autorun: false, name: affinity.id } : {}),
      });
      worker.on('failed', (job, err) => void inJobContext(job, () => this.failed(def, ports, job, err)));
      worker.on('error', (err) => this.workerErrors.report(err.message, name));
      this.workers.push(worker);
      await affinity?.add(shard, worker);
    }
    this.opts.log.info({ actor: def.address.name, queues: names.length }, 'actor started');
  }

  private keyLimit<M>(def: ActorDefinition<M, unknown>, names: string[], leaseMs: number, limit: number): KeyLimit | null {
    if (!def.limitKey || limit <= 0) return null;
    if (def.address.keyed) throw new Error(`keyed actor ${def.address.name} already runs one message per key`);
    const keys = this.opts.keys;
    if (!keys) throw new Error(`actor ${def.address.name} has a per-key limit but the runtime has no Redis key names`);
    return new KeyLimit({ redis: this.opts.queues.producer, queue: this.opts.queues.queue(names[0]), keys: (k) => keys.keyLimit(def.address.name, k), limit, leaseMs });
  }

  /**
   * A message of a limited key runs once it holds one of the key's slots;
   * otherwise it is parked in its queue (delayed, not failed) until a slot
   * frees. If Redis cannot be asked, it runs: the cap is fairness, and a
   * message must not be failed for it.
   */
  private async limited<M extends object, P>(limit: KeyLimit, def: ActorDefinition<M, P>, ports: P, job: Job<M & Asked>, token?: string): Promise<void> {
    const key = def.limitKey!(job.data);
    if (key === null || !job.id) return this.process(def, ports, job, token);
    let held: boolean;
    try {
      held = await limit.acquire(key, job.id);
    } catch (err) {
      this.opts.log.warn({ actor: def.address.name, err: ensureError(err).message }, 'per-key limit unreachable; running the message without it');
      return this.process(def, ports, job, token);
    }
    if (!held) {
      await job.moveToDelayed(limit.parkUntil(), token);
      throw new DelayedError();
    }
    try {
      await this.process(def, ports, job, token);
    } finally {
      await limit.release(key, job.id).catch((err) => this.opts.log.warn({ actor: def.address.name, err: ensureError(err).message }, 'could not free a per-key slot; it frees when its lease ends'));
    }
  }

  /** What a handler handed off early (ctx.handOff), and whether that went out. */
  private context<P>(ports: P, job: Job<Asked>, early: Early = { part: null, sent: null }): ActorContext<P> {
    return {
      ports,
      job: { id: job.id ?? '', attempt: job.attemptsMade + 1, enqueued_at: job.timestamp },
      signal: this.stopping.signal,
      send: (sends) => this.opts.dispatcher.send(sends),
      handOff: (part) => {
        if (early.part) return;
        early.part = part;
        // A failed hand-off is not the turn's failure: it then goes out with the returned outcome.
        early.sent = this.opts.dispatcher.deliver([...(part.publish ?? []), ...replyOf(job.data.reply_to, { ok: true, value: part.reply ?? null })], part.sends ?? []).then(
          () => true,
          () => false,
        );
      },
    };
  }

  private async process<M extends object, P>(def: ActorDefinition<M, P>, ports: P, job: Job<M & Asked>, token?: string, budgetMs = 0): Promise<void> {
    const started = Date.now();
    if (job.stalledCounter >= this.poisonStalls) return this.quarantine(def, ports, job, started, budgetExceeded(`stopped its worker ${job.stalledCounter} times (a crash, or a freeze that let its lock lapse)`));
    const early: Early = { part: null, sent: null };
    let outcome: Outcome;
    let result: TurnResult = 'done';
    let reply: Publication[];
    try {
      outcome = await withinBudget(def.handle(this.context(ports, job, early), job.data), budgetMs);
      if (early.part && (await early.sent)) reply = [];
      else {
        outcome = early.part ? withEarly(early.part, outcome) : outcome;
        reply = replyOf(job.data.reply_to, { ok: true, value: outcome.reply ?? null });
      }
    } catch (err) {
      if (err instanceof BudgetExceeded) return this.quarantine(def, ports, job, started, budgetExceeded(err.message));
      // A domain error is the message's answer and is never retried.
      if (!(err instanceof TroupeError)) {
        this.observe(def, job, 'failed', started, ensureError(err).message);
        throw err;
      }
      outcome = {};
      result = 'rejected';
      reply = replyOf(job.data.reply_to, { ok: false, status: err.status, error: err.toBody() });
    }
    await this.opts.dispatcher.deliver([...(outcome.publish ?? []), ...reply], outcome.sends ?? []);
    if (outcome.later) {
      this.observe(def, job, 'later', started);
      await job.updateData(outcome.later.data as M & Asked);
      await job.moveToDelayed(outcome.later.at, token);
      throw new DelayedError();
    }
    this.observe(def, job, result, started);
    // Off the job's path: the next job need not wait for it (it never throws).
    void this.leaveShare(def, job);
  }

  /** A message of a fair-shared actor finished for good: it no longer counts against its tenant's turn. */
  private async leaveShare(def: ActorDefinition<unknown, unknown>, job: Job): Promise<void> {
    const tenant = tenantOf(def.address, job.data);
    const fair = this.opts.dispatcher.fair;
    if (tenant === null || !fair || !job.id) return;
    // Not counted out, the job weighs on its tenant's later ranks until it is forgotten; it is never lost.
    await fair.done(def.address.name, tenant, job.id).catch((err) => this.opts.log.warn({ actor: def.address.name, err: ensureError(err).message }, 'could not count a finished message out of its tenant\'s share'));
  }

  /**
   * Poison work: a message that stalled its worker poisonStalls times (each time its process crashed, or froze
   * until its lock lapsed and a restart took it up again), or whose handler ran past its budget, is not handled
   * again. The actor ends what it belongs to (onQuarantine), and the asker, if still waiting, gets a 422
   * `processing_budget_exceeded`.
   */
  private async quarantine<M extends object, P>(def: ActorDefinition<M, P>, ports: P, job: Job<M & Asked>, started: number, error: string): Promise<void> {
    this.opts.log.error({ actor: def.address.name, job: job.id, stalls: job.stalledCounter, err: error }, 'message quarantined: it crashed, froze or overran its worker');
    const outcome = def.onQuarantine ? await def.onQuarantine(this.context(ports, job), job.data, error) : {};
    const reply = replyOf(job.data.reply_to, { ok: false, status: 422, error: { type: 'unprocessable_entity', code: 'processing_budget_exceeded', message: error.slice(error.indexOf(':') + 2) } });
    await this.opts.dispatcher.deliver([...(outcome.publish ?? []), ...reply], outcome.sends ?? []);
    this.observe(def, job, 'quarantined', started, error);
  }

  /** After the last attempt: the asker gets a 503 it can retry, and the actor may tell others. */
  private async failed<M extends object, P>(def: ActorDefinition<M, P>, ports: P, job: Job<M & Asked> | undefined, err: Error): Promise<void> {
    if (!job || err instanceof DelayedError) return;
    this.opts.log.warn({ actor: def.address.name, err: err.message, job: job.id, attempts: job.attemptsMade }, 'actor message failed');
    if (job.attemptsMade < (job.opts.attempts ?? 1) || this.stopping.signal.aborted) return;
    await this.leaveShare(def, job);
    try {
      const reply = replyOf(job.data.reply_to, { ok: false, status: 503, error: { type: 'service_unavailable', code: 'turn_failed', message: 'The session could not process the command; retry.' } });
      const outcome = def.onGiveUp ? await def.onGiveUp(this.context(ports, job), job.data, err) : {};
      await this.opts.dispatcher.deliver([...(outcome.publish ?? []), ...reply], outcome.sends ?? []);
    } catch (e) {
      this.opts.log.error({ actor: def.address.name, err: ensureError(e).message, job: job.id }, 'could not report a message given up');
    }
  }

  private observe(def: ActorDefinition<unknown, unknown>, job: Job, result: TurnResult, started: number, error?: string): void {
    try {
      this.observer.turn({ actor: def.address.name, queue: job.queueName, job_id: job.id ?? '', attempt: job.attemptsMade + 1, result, duration_ms: Date.now() - started, waited_ms: Math.max(0, started - job.timestamp - (job.delay ?? 0)), ...(error ? { error } : {}) });
    } catch {
      // An observer must never fail a turn.
    }
  }

  /** Stops taking messages, aborts handlers that wait on the outside, and lets running ones finish. Idempotent. */
  close(): Promise<void> {
    if (!this.closing) {
      this.closing = (async () => {
        this.stopping.abort();
        this.guard.stop();
        if (this.inheritTimer) clearInterval(this.inheritTimer);
        // Leaving first lets the other processes take this one's shards while its running turns finish.
        await this.affinity?.leave();
        if (!(await closeWorkers(this.workers, this.turns, this.opts.queues.producer))) {
          this.opts.log.warn({ workers: this.workers.length }, 'redis unreachable: stopped waiting for the queue connections to close (no turn was running)');
        }
        await this.affinity?.handOver();
      })();
    }
    return this.closing;
  }
}
