import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Prometheus metrics of one process. Each role registers what it measures here. */
export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route'>;
  readonly rateLimitRefusals: Counter<'surface' | 'scope'>;

  constructor(role: string) {
    this.registry.setDefaultLabels({ role });
    collectDefaultMetrics({ register: this.registry, prefix: 'troupe_' });
    this.httpRequests = new Counter({
      name: 'troupe_http_requests_total',
      help: 'HTTP requests by route template and status.',
      labelNames: ['method', 'route', 'status'],
      registers: [this.registry],
    });
    this.httpDuration = new Histogram({
      name: 'troupe_http_request_duration_seconds',
      help: 'HTTP request duration by route template.',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [this.registry],
    });
    this.rateLimitRefusals = new Counter({
      name: 'troupe_rate_limit_refusals_total',
      help: 'Requests refused with 429, by surface (api, routing, sessions) and the limit reached (org, key, running).',
      labelNames: ['surface', 'scope'],
      registers: [this.registry],
    });
  }
}
