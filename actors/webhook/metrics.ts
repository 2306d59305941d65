import { Counter, Histogram, type Registry } from 'prom-client';

export type AttemptResult = 'succeeded' | 'failed' | 'refused' | 'gone';
export type DeliveryResult = 'succeeded' | 'failed' | 'disabled' | 'skipped';

/** What the webhook actor measures, on the process's registry (served at /metrics). */
export interface WebhookMetrics {
  attempt(result: AttemptResult): void;
  delivery(result: DeliveryResult): void;
  /** Enqueue → first attempt answered: the latency a receiver sees. */
  firstAttempt(seconds: number): void;
}

function metric<T>(registry: Registry, name: string, make: () => T): T {
  // Roles started twice on one registry (tests) must not register a name twice.
  return (registry.getSingleMetric(name) as T | undefined) ?? make();
}

export function webhookMetrics(registry: Registry): WebhookMetrics {
  const attempts = metric(registry, 'troupe_webhook_attempts_total', () => new Counter({
    name: 'troupe_webhook_attempts_total',
    help: 'Webhook delivery attempts by result.',
    labelNames: ['result'] as const,
    registers: [registry],
  }));
  const deliveries = metric(registry, 'troupe_webhook_deliveries_total', () => new Counter({
    name: 'troupe_webhook_deliveries_total',
    help: 'Webhook deliveries by final outcome (skipped: no webhook or not subscribed).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  }));
  const latency = metric(registry, 'troupe_webhook_first_attempt_seconds', () => new Histogram({
    name: 'troupe_webhook_first_attempt_seconds',
    help: 'Time from an event being enqueued to its first delivery attempt being answered.',
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 15, 30],
    registers: [registry],
  }));
  return {
    attempt: (result) => attempts.inc({ result }),
    delivery: (outcome) => deliveries.inc({ outcome }),
    firstAttempt: (s) => latency.observe(s),
  };
}
