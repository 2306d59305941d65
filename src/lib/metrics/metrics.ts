import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** How often event-loop delay is sampled (see the constructor). */
const EVENT_LOOP_SAMPLE_MS = 100;

const SECONDS_FAST = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];
const SECONDS_SLOW = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** Reads one queue's backlog: counts by state, and when its oldest waiting job was added (ms, or null). */
export type QueueProbe = () => Promise<{ counts: Record<string, number>; oldestWaitingAt: number | null }>;

/**
 * Prometheus metrics of one process, every series Troupe exports declared in
 * one place (docs/operations.md lists them). Roles feed the ones they measure;
 * series nobody feeds in a process simply stay empty there.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route'>;
  readonly rateLimitRefusals: Counter<'surface' | 'scope'>;
  readonly turnDuration: Histogram<'actor' | 'result'>;
  readonly turnWait: Histogram<'actor'>;
  readonly eventsAppended: Counter<'type'>;
  readonly toolCalls: Counter<'outcome'>;
  readonly sseClients: Gauge;
  readonly sseStalled: Counter;
  readonly sseLedgerReads: Counter;
  readonly sseLedgerReadsWaiting: Gauge;
  readonly modelCallDuration: Histogram<'provider' | 'model' | 'mode' | 'outcome'>;
  readonly modelTokens: Counter<'provider' | 'model' | 'direction'>;
  readonly modelErrors: Counter<'provider' | 'model' | 'kind'>;
  readonly routerSelections: Counter<'model' | 'reason'>;
  readonly routerFallbacks: Counter<'model'>;
  readonly routerBreakerTransitions: Counter<'model' | 'to'>;
  readonly mongoClientReplacements: Counter;
  readonly mongoClosedSocketWrites: Counter<'when'>;
  readonly processErrors: Counter<'kind'>;
  readonly rateLimiterFailOpen: Counter<'surface'>;
  readonly egressRefusals: Counter<'reason'>;
  readonly scheduleTicks: Counter<'outcome'>;
  readonly spendUsd: Counter<'source'>;
  readonly budgetRefusals: Counter<'scope'>;
  readonly budgetThresholds: Counter<'scope' | 'threshold'>;
  /** Queues whose depth and age this process reports, by the name shown in the `queue` label. */
  private readonly queues = new Map<string, QueueProbe[]>();

  constructor(role: string) {
    this.registry.setDefaultLabels({ role });
    // prom-client samples event-loop delay with a libuv timer at this period; its default, 10 ms, wakes an
    // idle process 100 times a second (most of an idle router's CPU). Lag worth an alert lasts far longer.
    collectDefaultMetrics({ register: this.registry, prefix: 'troupe_', eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    const registers = [this.registry];
    this.httpRequests = new Counter({ name: 'troupe_http_requests_total', help: 'HTTP requests by route template and status.', labelNames: ['method', 'route', 'status'], registers });
    this.httpDuration = new Histogram({ name: 'troupe_http_request_duration_seconds', help: 'HTTP request duration by route template.', labelNames: ['method', 'route'], buckets: SECONDS_FAST, registers });
    this.rateLimitRefusals = new Counter({ name: 'troupe_rate_limit_refusals_total', help: 'Requests refused with 429, by surface (api, routing, routing_tokens, sessions, streams) and the limit reached (org, key, running).', labelNames: ['surface', 'scope'], registers });
    this.turnDuration = new Histogram({ name: 'troupe_actor_turn_duration_seconds', help: 'Time an actor spent handling one message, by actor and result (done, rejected, later, failed).', labelNames: ['actor', 'result'], buckets: SECONDS_SLOW, registers });
    this.turnWait = new Histogram({ name: 'troupe_actor_queue_wait_seconds', help: 'Time a message waited in its queue before an actor took it.', labelNames: ['actor'], buckets: SECONDS_SLOW, registers });
    this.eventsAppended = new Counter({ name: 'troupe_ledger_events_appended_total', help: 'Events appended to session ledgers, by event type.', labelNames: ['type'], registers });
    this.toolCalls = new Counter({ name: 'troupe_tool_calls_total', help: 'Tool calls by outcome: requested, completed, submitted, or failed_<reason>.', labelNames: ['outcome'], registers });
    this.sseClients = new Gauge({ name: 'troupe_sse_clients', help: 'Open session event streams on this process.', registers });
    this.sseStalled = new Counter({ name: 'troupe_sse_streams_stalled_total', help: 'Session event streams ended because their client read nothing for TROUPE_SSE_STALL_MS (told to resume with Last-Event-ID).', registers });
    this.sseLedgerReads = new Counter({ name: 'troupe_sse_ledger_reads_total', help: 'Ledger reads of session event streams sent to the store (backfills, gap repairs, catch-ups after a subscriber reconnect), after streams of one session shared them.', registers });
    this.sseLedgerReadsWaiting = new Gauge({ name: 'troupe_sse_ledger_reads_waiting', help: 'Ledger reads of session event streams waiting for one of the few that may run at once (a catch-up burst after a subscriber reconnect).', registers });
    this.modelCallDuration = new Histogram({ name: 'troupe_model_call_duration_seconds', help: 'Upstream model calls, whole call, by provider, model, mode (complete, stream) and outcome.', labelNames: ['provider', 'model', 'mode', 'outcome'], buckets: SECONDS_SLOW, registers });
    this.modelTokens = new Counter({ name: 'troupe_model_tokens_total', help: 'Tokens reported by upstream models, by direction (input, output).', labelNames: ['provider', 'model', 'direction'], registers });
    this.modelErrors = new Counter({ name: 'troupe_model_call_errors_total', help: 'Failed upstream model calls by kind (an HTTP status, network, stream, refused).', labelNames: ['provider', 'model', 'kind'], registers });
    this.routerSelections = new Counter({ name: 'troupe_router_selections_total', help: 'Routing interface: the model that answered, and why (first eligible, sticky, fallback).', labelNames: ['model', 'reason'], registers });
    this.routerFallbacks = new Counter({ name: 'troupe_router_fallbacks_total', help: 'Routing interface: candidates that failed retryably and were passed over.', labelNames: ['model'], registers });
    this.routerBreakerTransitions = new Counter({ name: 'troupe_router_breaker_transitions_total', help: 'Routing interface: circuit-breaker transitions this process made, by model and the state entered (open, half_open, closed).', labelNames: ['model', 'to'], registers });
    this.mongoClientReplacements = new Counter({ name: 'troupe_mongo_client_replacements_total', help: 'MongoDB clients replaced because their server monitor was wedged while the server answered (store/mongo-watchdog.ts).', registers });
    this.processErrors = new Counter({ name: 'troupe_uncaught_errors_total', help: 'Throws nothing handled, caught by the process guards (lifecycle/process-guards.ts), by kind: unhandled_rejection (logged, still serving) or uncaught_exception (drained, exited).', labelNames: ['kind'], registers });
    this.rateLimiterFailOpen = new Counter({ name: 'troupe_rate_limiter_fail_open_total', help: 'Rate-limit checks let through because Redis could not be asked, by surface (api, routing, routing_tokens, routed_turns, auth_failures).', labelNames: ['surface'], registers });
    this.mongoClosedSocketWrites = new Counter({ name: 'troupe_mongo_closed_socket_writes_total', help: 'MongoDB commands the driver fix failed as a closed connection instead of letting them wait forever (store/driver-fix.ts), by when: before_write, waiting_for_drain.', labelNames: ['when'], registers });
    this.scheduleTicks = new Counter({ name: 'troupe_schedule_ticks_total', help: 'Schedule tick attempts by outcome: sent, failed (refused, recorded), skipped (agent deleted), paused, gone (schedule deleted), duplicate (already run), error (threw; BullMQ retries it), gave_up (attempts spent; recorded failed).', labelNames: ['outcome'], registers });
    this.egressRefusals = new Counter({ name: 'troupe_egress_refusals_total', help: 'Connections of sandboxed tools refused by the egress proxy, by reason (not_public, troupe_own, not_allowed, unresolvable, bad_target, too_many_connections).', labelNames: ['reason'], registers });
    this.spendUsd = new Counter({ name: 'troupe_spend_usd_total', help: 'Priced model spend in USD (calls priced in another currency are left out), by source: routing (routing interface calls) or turns (agent turns, routed or not).', labelNames: ['source'], registers });
    this.budgetRefusals = new Counter({ name: 'troupe_budget_refusals_total', help: 'Calls and turns refused with 402 budget_exceeded, by the scope of the budget that had no room (org, api_key, routing_key, session).', labelNames: ['scope'], registers });
    this.budgetThresholds = new Counter({ name: 'troupe_budget_thresholds_total', help: 'Budgets whose period spend first reached a threshold, by the budget scope (org, api_key, routing_key, session) and threshold (80, 100: percent of the amount).', labelNames: ['scope', 'threshold'], registers });
    const queues = this.queues;
    new Gauge({
      name: 'troupe_queue_jobs',
      help: 'Jobs in each actor queue by state (session shards summed under queue="session").',
      labelNames: ['queue', 'state'],
      registers,
      async collect() {
        this.reset();
        for (const [queue, probes] of queues) {
          for (const r of await Promise.all(probes.map((p) => p().catch(() => null)))) {
            for (const [state, n] of Object.entries(r?.counts ?? {})) this.inc({ queue, state }, n);
          }
        }
      },
    });
    new Gauge({
      name: 'troupe_queue_oldest_waiting_seconds',
      help: 'Age of the oldest job waiting in each actor queue (0 when none waits).',
      labelNames: ['queue'],
      registers,
      async collect() {
        this.reset();
        const now = Date.now();
        for (const [queue, probes] of queues) {
          const read = await Promise.all(probes.map((p) => p().catch(() => null)));
          // Redis did not answer: the age is unknown, so no sample (0 would say nothing waits).
          if (read.every((r) => r === null)) continue;
          const oldest = read.reduce<number | null>((m, r) => (r?.oldestWaitingAt != null && (m === null || r.oldestWaitingAt < m) ? r.oldestWaitingAt : m), null);
          this.set({ queue }, oldest === null ? 0 : Math.max(0, (now - oldest) / 1000));
        }
      },
    });
  }

  /** Reports these queues under one `queue` label (idempotent per label). */
  watchQueues(label: string, probes: QueueProbe[]): void {
    // Both queue gauges read the same probe in one scrape: one Redis round of reads serves both.
    if (!this.queues.has(label)) this.queues.set(label, probes.map(memoFor(1000)));
  }
}

function memoFor(ms: number): (p: QueueProbe) => QueueProbe {
  return (probe) => {
    let last: { at: number; value: ReturnType<QueueProbe> } | null = null;
    return () => {
      const now = Date.now();
      if (!last || now - last.at > ms) last = { at: now, value: probe() };
      return last.value;
    };
  };
}
