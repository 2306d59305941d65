/**
 * Every Redis key and channel name Troupe uses is built here, and only here.
 *
 * Keys of one family share a hash tag (`{...}`) so that multi-key operations
 * (BullMQ's Lua scripts touch several keys of one queue) land on one slot of
 * a Redis Cluster.
 */
export class RedisKeys {
  constructor(readonly prefix: string) {}

  /** BullMQ `prefix` option for a queue; BullMQ appends `:<queue name>:<suffix>`. */
  queuePrefix(queue: string): string {
    return `{${this.prefix}:q:${queue}}`;
  }

  /** Pub/sub channel carrying one session's ledger envelopes. */
  sessionEvents(sessionId: string): string {
    return `${this.prefix}:events:${sessionId}`;
  }

  /** Ephemeral `assistant.delta` records of one session's streaming model calls; never in the ledger. */
  sessionDeltas(sessionId: string): string {
    return `${this.prefix}:deltas:${sessionId}`;
  }

  /** Pub/sub channel of message cancellations: workers abort the model calls and tool runs of a cancelled message. */
  messageCancels(): string {
    return `${this.prefix}:cancels`;
  }

  /** The routing interface's stickiness record of one conversation (model and request-level effort). */
  routingConversation(orgId: string, routerId: string, conversationId: string): string {
    return `{${this.prefix}:rt}:conv:${orgId}:${routerId}:${conversationId}`;
  }

  /** Key prefix of one rate-limit counter family (`api-org`, `routing-key`, ...); the library appends `:<id>`. */
  rateLimit(counter: string): string {
    return `${this.prefix}:rl:${counter}`;
  }

}
