/**
 * What senders need to reach an actor, whoever they are (another actor, the
 * web API, batch creation, the sweeper): its address, the `Send` shape and
 * the job-id rules. The actors' contracts (src/domain/actors/<name>.ts) are
 * built from these; the runtime (actors/runtime/) delivers them.
 */

/** BullMQ priorities: lower runs first. Interactive sessions go ahead of batch work. */
export const PRIORITY = Object.freeze({ interactive: 1, batch: 10 } as const);
export type Priority = keyof typeof PRIORITY;

/** Where messages for an actor go. Declared with its contract (src/domain/actors/<name>.ts), so senders need not load its handler. */
export interface ActorAddress {
  readonly name: string;
  /**
   * A keyed actor handles one message at a time per key, cluster-wide: its
   * queue is sharded by key and each shard runs one job at a time. Unkeyed
   * actors (activities) run many messages at once.
   */
  readonly keyed: boolean;
  /** Attempts before a message is given up; retries only follow failures that are not domain errors. */
  readonly attempts: number;
  /**
   * How long a message's job id is remembered from its send, so that sending it again runs nothing, whether or
   * not its finished job is still kept (a kept job's id dedupes by itself, but finished jobs are dropped after an
   * hour or once 50,000 newer ones finished, which at volume is minutes). A small key per message; 0 = no more
   * than the kept jobs.
   */
  readonly rememberMs: number;
  /**
   * The message field naming its tenant (unkeyed actors): tenants then take
   * turns on the queue instead of first come first served (fair-share.ts).
   */
  readonly shareBy?: string;
}

export function actorAddress(name: string, opts: { keyed?: boolean; attempts?: number; rememberMs?: number; shareBy?: string } = {}): ActorAddress {
  return Object.freeze({ name, keyed: opts.keyed ?? false, attempts: opts.attempts ?? 8, rememberMs: opts.rememberMs ?? 0, ...(opts.shareBy && !opts.keyed ? { shareBy: opts.shareBy } : {}) });
}

/** Who waits for a keyed actor's answer: a web node's reply channel and its request id. */
export interface ReplyTo {
  channel: string;
  request_id: string;
}

/** A message handed to an actor. The job id is deterministic, so a repeated send is one job. */
export interface Send {
  to: ActorAddress;
  /** The key of a keyed actor (picks the shard). */
  key?: string;
  /** The message kind (BullMQ job name). */
  name: string;
  data: unknown;
  job_id: string;
  delay_ms?: number;
  priority?: Priority;
}

/**
 * Where senders outside an actor hand messages off (batch creation, the
 * sweeper, the web API): a port, wired by the composition root to the
 * runtime's Dispatcher, so that none of them imports the runtime.
 */
export interface Outbox {
  send(sends: Send[]): Promise<void>;
}

/** BullMQ job ids may not contain ':'; ids built from session ids and event ids do. */
export function safeJobId(id: string): string {
  return id.replace(/:/g, '_');
}
