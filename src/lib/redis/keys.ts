/**
 * Every Redis key and channel name Troupe uses is built here, and only here.
 *
 * Only a BullMQ queue's keys and a limited key's slots and waiters share a
 * hash tag (`{...}`): their Lua scripts touch several keys, which must land
 * on one slot of a Redis Cluster. Every other key and channel is used alone and carries no tag, so
 * sessions and conversations spread over all slots (and all masters).
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

  /** Pub/sub channel of agent soft-deletions: workers mark the sessions of the agent they hold in memory. */
  agentDeletions(): string {
    return `${this.prefix}:agent-deletions`;
  }

  /**
   * The routing interface's stickiness record of one conversation (model and
   * request-level effort). Read and written one key at a time, so no hash tag:
   * conversations spread over every slot of a cluster instead of one hot slot.
   */
  routingConversation(orgId: string, routerId: string, conversationId: string): string {
    return `${this.prefix}:rt:${orgId}:${routerId}:${conversationId}`;
  }

  /**
   * Whose turn it is to re-arm the schedules' job schedulers at worker start (lib/schedules/reconcile-turns.ts): a
   * lease while one process scans, then a marker for the rest of the window. In the same Redis as the schedulers, so
   * a flush that loses them loses the marker too and the next start reconciles.
   */
  scheduleReconcile(): string {
    return `${this.prefix}:sched-reconcile`;
  }

  /** Set once a code agent's message's run has called ctx.transcript(): its later steps read the session's messages. */
  agentTranscript(messageId: string): string {
    return `${this.prefix}:at:${messageId}`;
  }

  /** Sorted set of live worker processes (member id → last heartbeat), over which session shards are split. */
  workerMembers(): string {
    return `${this.prefix}:workers`;
  }

  /**
   * One key's slots and waiters under a per-key concurrency limit of an
   * actor (actors/runtime/key-limit.ts). Its scripts touch both, so they
   * share a hash tag: one slot of a Redis Cluster per limited key.
   */
  keyLimit(actor: string, key: string): { held: string; waiting: string } {
    const base = `{${this.prefix}:kl:${actor}:${key}}`;
    return { held: `${base}:held`, waiting: `${base}:waiting` };
  }

  /** Sorted set of one tenant's pending jobs on a fair-shared actor's queue (actors/runtime/fair-share.ts). */
  fairShare(actor: string, tenant: string): string {
    return `${this.prefix}:fs:${actor}:${tenant}`;
  }

  /** Key prefix of one rate-limit counter family (`api-org`, `routing-key`, ...); the library appends `:<id>`. */
  rateLimit(counter: string): string {
    return `${this.prefix}:rl:${counter}`;
  }

  /** One candidate's circuit breaker (a hash: failures, opened at, probe until), per org and router: tenants never share one. */
  routingBreaker(orgId: string, routerId: string, model: string): string {
    return `${this.prefix}:br:${orgId}:${routerId}:${model}`;
  }

  /**
   * One budget's counters in one period (a hash: spent, reserved, each reservation, thresholds fired) and its
   * reservations' deadlines (a sorted set). Every budget of an org shares the org's hash tag, so one script checks
   * an org's, a key's and a session's budget together on one slot of a Redis Cluster.
   */
  budget(orgId: string, scope: string, id: string, period: string): { counters: string; deadlines: string } {
    const base = `{${this.prefix}:bg:${orgId}}:${scope}:${id}:${period}`;
    return { counters: base, deadlines: `${base}:z` };
  }
}
