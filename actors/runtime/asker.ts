import { randomUUID } from 'node:crypto';
import { TroupeError, UnavailableError, type ErrorBody } from '../../src/domain/errors.js';
import type { PubSubHub } from '../../src/pubsub/hub.js';
import type { PRIORITY, SessionJob, SessionMailbox } from './queues.js';

export type ReplyBody = { ok: true; value: unknown } | { ok: false; status: number; error: ErrorBody };
export type ReplyMessage = ReplyBody & { request_id: string };

/**
 * The web side of "ask": send a command to a session actor and await its
 * reply. Replies arrive on this node's own channel over the process's one
 * subscriber connection; nothing polls.
 */
export class Asker {
  readonly channel: string;
  private readonly waiting = new Map<string, { resolve(v: unknown): void; reject(e: Error): void; timer: NodeJS.Timeout }>();
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly hub: PubSubHub,
    private readonly mailbox: SessionMailbox,
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

  async ask<T>(job: Omit<SessionJob, 'reply_to'>, priority: keyof typeof PRIORITY = 'interactive'): Promise<T> {
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
    try {
      await this.mailbox.send({ ...job, reply_to: { channel: this.channel, request_id } }, priority);
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
