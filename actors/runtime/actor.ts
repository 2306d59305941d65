/**
 * The one shape of a Troupe actor, in the spirit of Restate's keyed objects
 * and Temporal's workflow/activity split. An actor declares:
 *  - its address (name, keyed or not, how often a message is attempted),
 *  - the messages it accepts (its contract, src/domain/actors/<name>.ts),
 *  - the ports it needs (narrow interfaces, wired by the composition root),
 *  - `handle(ctx, message)`: a pure decision wrapped in the loads and writes
 *    of its own state, returning an Outcome.
 * The runtime alone owns BullMQ, locking, retries, publishing and the
 * hand-off of effects: actors never import bullmq or ioredis.
 */

import type { ActorAddress, Send } from '../../src/domain/actors/address.js';

/** The tenant a message of a fair-shared address belongs to; null when the address is not shared or the field is missing. */
export function tenantOf(to: ActorAddress, data: unknown): string | null {
  if (!to.shareBy || typeof data !== 'object' || data === null) return null;
  const v = (data as Record<string, unknown>)[to.shareBy];
  return typeof v === 'string' && v ? v : null;
}

/** A pub/sub notification published after the turn's writes (a hint: readers repair from the store). */
export interface Publication {
  channel: string;
  payload: string;
}

/** What a handler decided, for the runtime to carry out after it returns. */
export interface Outcome {
  /** The answer for an asking caller (keyed actors). */
  reply?: unknown;
  /** Published, then `sends` handed off, in one Redis round trip. */
  publish?: Publication[];
  sends?: Send[];
  /** Run this message again at `at` (epoch ms) with `data`; not counted as a failed attempt. */
  later?: { at: number; data: unknown };
}

export const DONE: Outcome = Object.freeze({});

/** What a handler may use besides its ports. */
export interface ActorContext<P> {
  readonly ports: P;
  readonly job: { id: string; attempt: number; enqueued_at: number };
  /** Aborted when the process shuts down; handlers that wait on the outside world pass it on. */
  readonly signal: AbortSignal;
  /** Hands messages off now (before the handler returns), for when later writes depend on it. */
  send(sends: Send[]): Promise<void>;
  /**
   * Carries out part of the outcome now, in one pipeline: answers the asking
   * caller with `reply`, publishes and sends, while the handler goes on with
   * writes none of it depends on. The handler's returned outcome is then only
   * what remains (its `reply` is not sent again); if this hand-off fails, the
   * runtime delivers it with the returned outcome instead. Safe only once what
   * it reports is durable: if the handler fails later, the message is retried
   * and its replay must answer, publish and send the same (job ids dedupe).
   * Called at most once per message.
   */
  handOff(early: Pick<Outcome, 'reply' | 'publish' | 'sends'>): void;
}

export interface ActorDefinition<M, P> {
  readonly address: ActorAddress;
  handle(ctx: ActorContext<P>, message: M): Promise<Outcome>;
  /**
   * The key of a per-key concurrency limit (an unkeyed actor whose messages
   * wait on outside parties, e.g. one webhook endpoint): with a limit set at
   * start, at most that many messages of one key run at once across every
   * process, and the others are parked in the queue until a slot frees.
   * Null = not limited.
   */
  limitKey?(message: M): string | null;
  /** After the last attempt failed: what to tell others (e.g. report an error result to the session). */
  onGiveUp?(ctx: ActorContext<P>, message: M, err: Error): Promise<Outcome>;
  /**
   * Instead of `handle`, for a message that stalled or crashed its worker too often (poison work): end what it
   * belongs to with `error` (the session fails its message). It must not do what `handle` does; if it throws,
   * the message is retried, and quarantined again, never handled.
   */
  onQuarantine?(ctx: ActorContext<P>, message: M, error: string): Promise<Outcome>;
}

export function defineActor<M, P>(def: ActorDefinition<M, P>): ActorDefinition<M, P> {
  return Object.freeze(def);
}

/** Where a job stands: BullMQ's states, or null when there is no such job. */
export type JobState = 'waiting' | 'prioritized' | 'delayed' | 'active' | 'completed' | 'failed' | 'waiting-children' | 'unknown';

/** Looks at and removes jobs by address and id (the stranded-work sweeper). */
export interface JobProbe {
  state(job: Pick<Send, 'to' | 'key' | 'job_id'>): Promise<JobState | null>;
  remove(job: Pick<Send, 'to' | 'key' | 'job_id'>): Promise<void>;
}
