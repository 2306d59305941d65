import { randomUUID } from 'node:crypto';
import { TroupeError, UnavailableError, type ErrorBody } from '../../src/domain/errors.js';
import type { PubSubHub } from '../../src/lib/pubsub/hub.js';
import type { ReplyTo, Send } from '../../src/domain/actors/address.js';
import type { Dispatcher } from './dispatcher.js';

export type ReplyBody = { ok: true; value: unknown } | { ok: false; status: number; error: ErrorBody };
export type ReplyMessage = ReplyBody & { request_id: string };

/** What an asked job carries besides its message: where the answer goes. */
export interface Asked {
  reply_to?: ReplyTo;
}

/**
 * The caller's side of "ask": send a message to a keyed actor and await its
 * reply. The runtime publishes the reply in the same pipeline as the turn's
 * own notifications, so answering costs the worker no extra round trip;
 * replies arrive on this node's channel over the process's one subscriber.
 */
export class Asker {
  readonly channel: string;
  private readonly waiting = new Map<string, { resolve(v: unknown): void; reject(e: Error): void; timer: NodeJS.Timeout }>();
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly hub: PubSubHub,
    private readonly dispatcher: Dispatcher,
    channelPrefix: string,
    private readonly timeoutMs = 15_000,
  ) {
    this.channel = `${channelPrefix}${randomUUID()}`;
  }

  async start(): Promise<void> {
    this.unsubscribe = await this.hub.subscribe(this.channel, (raw) => this.onReply(raw));
    // A reply published while the subscriber is away never arrives, and a Redis that went
    // away may have lost the command too: answer 503 at once rather than at the timeout,
    // so the client retries (with its Idempotency-Key) as soon as Redis is back.
    this.hub.onDisconnect(() => this.failWaiting(new UnavailableError('The connection to the session actors was interrupted; the command may still be applied. Retry with the same Idempotency-Key.', 'session_unavailable')));
  }

  private failWaiting(err: Error): void {
    for (const [, w] of this.waiting) {
      clearTimeout(w.timer);
      w.reject(err);
    }
    this.waiting.clear();
  }

  private onReply(raw: string): void {
    const msg = JSON.parse(raw) as ReplyMessage;
    const w = this.waiting.get(msg.request_id);
    if (!w) return;
    this.waiting.delete(msg.request_id);
    clearTimeout(w.timer);
    if (msg.ok) w.resolve(msg.value);
    else w.reject(new TroupeError(msg.status, msg.error.type, msg.error.code, msg.error.message, msg.error.param));
  }

  /**
   * The job id gets the request id appended: the asker must get its own reply
   * even when the same message ran before (the actor then answers with the
   * recorded outcome instead of applying it twice).
   */
  async ask<T>(send: Send): Promise<T> {
    const request_id = randomUUID();
    const result = new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(request_id);
        reject(new UnavailableError('The session did not answer in time; the command may still be applied. Retry with the same Idempotency-Key.', 'session_timeout'));
      }, this.timeoutMs);
      this.waiting.set(request_id, { resolve, reject, timer });
    });
    // It may be rejected (a dropped connection) while the send below is still pending: not unhandled.
    result.catch(() => undefined);
    const reply_to: ReplyTo = { channel: this.channel, request_id };
    try {
      await this.dispatcher.send([{ ...send, data: { ...(send.data as object), reply_to }, job_id: `${send.job_id}.${request_id}` }]);
    } catch (err) {
      const w = this.waiting.get(request_id);
      if (w) clearTimeout(w.timer);
      this.waiting.delete(request_id);
      throw err;
    }
    return (await result) as T;
  }

  async close(): Promise<void> {
    this.unsubscribe?.();
    this.failWaiting(new UnavailableError('The server is shutting down.', 'shutting_down'));
  }
}
