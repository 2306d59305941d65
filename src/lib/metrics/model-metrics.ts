import type { ModelCallRecord } from '../llm/client.js';
import { recordedInput } from '../llm/types.js';
import { LabelSets } from './label-sets.js';
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

const DURATION = new LabelSets<{ provider: string; model: string; mode: string; outcome: string }>(['provider', 'model', 'mode', 'outcome']);
const ERRORS = new LabelSets<{ provider: string; model: string; kind: string }>(['provider', 'model', 'kind']);
const TOKENS = new LabelSets<{ provider: string; model: string; direction: string }>(['provider', 'model', 'direction']);

function record(metrics: Metrics, r: ModelCallRecord): void {
  try {
    metrics.modelCallDuration.observe(DURATION.of(r.provider, r.model, r.mode, r.error ? 'error' : 'ok'), r.seconds);
    if (r.error) metrics.modelErrors.inc(ERRORS.of(r.provider, r.model, r.error));
    if (r.usage) {
      metrics.modelTokens.inc(TOKENS.of(r.provider, r.model, 'input'), recordedInput(r.usage, r.provider));
      metrics.modelTokens.inc(TOKENS.of(r.provider, r.model, 'output'), r.usage.outputTokens);
    }
  } catch {
    // Off the call's path now, so nothing would catch it: metrics must never take the process down.
  }
}
