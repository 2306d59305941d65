import type { ModelCallRecord } from '../llm/client.js';
import type { Metrics } from './metrics.js';

/**
 * LlmClient's observer: latency, tokens and errors per provider and (upstream) model.
 * Recorded on the next turn of the event loop, after the caller has sent its answer:
 * prom-client hashes each series' labels on every update, which showed in the router's
 * profile on the path between the upstream's answer and the client's.
 */
export function modelCallMetrics(metrics: Metrics): (r: ModelCallRecord) => void {
  return (r) => void setImmediate(record, metrics, r);
}

function record(metrics: Metrics, r: ModelCallRecord): void {
  try {
    const labels = { provider: r.provider, model: r.model };
    metrics.modelCallDuration.observe({ ...labels, mode: r.mode, outcome: r.error ? 'error' : 'ok' }, r.seconds);
    if (r.error) metrics.modelErrors.inc({ ...labels, kind: r.error });
    if (r.usage) {
      metrics.modelTokens.inc({ ...labels, direction: 'input' }, r.usage.inputTokens);
      metrics.modelTokens.inc({ ...labels, direction: 'output' }, r.usage.outputTokens);
    }
  } catch {
    // Off the call's path now, so nothing would catch it: metrics must never take the process down.
  }
}
