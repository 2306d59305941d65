import type { ModelCallRecord } from '../llm/client.js';
import type { Metrics } from './metrics.js';

/** LlmClient's observer: latency, tokens and errors per provider and (upstream) model. */
export function modelCallMetrics(metrics: Metrics): (r: ModelCallRecord) => void {
  return (r) => {
    const labels = { provider: r.provider, model: r.model };
    metrics.modelCallDuration.observe({ ...labels, mode: r.mode, outcome: r.error ? 'error' : 'ok' }, r.seconds);
    if (r.error) metrics.modelErrors.inc({ ...labels, kind: r.error });
    if (r.usage) {
      metrics.modelTokens.inc({ ...labels, direction: 'input' }, r.usage.inputTokens);
      metrics.modelTokens.inc({ ...labels, direction: 'output' }, r.usage.outputTokens);
    }
  };
}
