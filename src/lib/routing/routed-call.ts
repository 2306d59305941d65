import type { Price } from '../../store/usage.js';
import { ErrorType, TroupeError } from '../../domain/errors.js';
import { UPSTREAM_TOO_LARGE, UpstreamError } from '../llm/errors.js';
import type { RoutingInfo } from '../llm/formats/format.js';
import { recordedInput, type LlmRequest, type Usage } from '../llm/types.js';
import { type DroppableParam } from '../../domain/providers.js';
import type { Logger } from '../log/logger.js';
import { LabelSets } from '../metrics/label-sets.js';
import type { Metrics } from '../metrics/metrics.js';
import type { CandidateDoc, RouterDoc } from '../../domain/views/router.js';
import type { StickyRecord, Stickiness } from './conversation.js';
import type { EffortPlan } from './effort.js';
import type { Ingress } from './ingress.js';
import type { Selection } from './select.js';
import type { UsageBuffer } from './usage-buffer.js';
import { settleAll, type Admitted } from './admission.js';

/** Everything decided about one routing request before any upstream is called. */
export interface RoutedCall {
  orgId: string;
  router: RouterDoc;
  ingress: Ingress;
  req: LlmRequest;
  plan: EffortPlan;
  convId: string;
  sticky: StickyRecord | null;
  selection: Selection;
  /** The request's logger, made on first use (most calls log nothing). */
  log: () => Logger;
  /** Set for agent turns: their usage is the session's, not the routing interface's. */
  billedTo?: { agentId: string; sessionId: string };
  /** What the call holds under the admissions it passed (token windows, budget reservations): settled with its usage. */
  held: readonly Admitted[];
  /** Its usage was counted; a call that ends without it gives back what it holds. */
  settled: boolean;
}

/** A candidate's price; candidates default to 0 per million tokens, in USD unless they name a currency. */
export function candidatePrice(c: CandidateDoc): Price {
  return { input_price: c.input_price ?? 0, output_price: c.output_price ?? 0, currency: c.currency ?? 'USD' };
}

/** The request as one candidate receives it. */
export function requestFor(call: RoutedCall, c: CandidateDoc): LlmRequest {
  // A model that understands configuration updates gets them with the request-level effort
  // unchanged; any other gets the effective effort and never sees the updates.
  let effort = c.configuration_update ? call.plan.requestLevel : call.plan.effective;
  if (c.provider === 'anthropic' && !c.thinking) effort = undefined;
  const req: LlmRequest = { ...call.req, effort, thinking: c.thinking ? call.req.thinking : undefined };
  if (c.drop_params) for (const p of c.drop_params) DROP[p](req);
  return req;
}

/** How each droppable parameter is left out of the canonical request; top_k is never carried, so there is nothing to drop. */
const DROP: Record<DroppableParam, (r: LlmRequest) => void> = {
  temperature: (r) => (r.temperature = undefined),
  top_p: (r) => (r.topP = undefined),
  top_k: () => {},
  stop: (r) => (r.stop = undefined),
  parallel_tool_calls: (r) => (r.parallelToolCalls = undefined),
};

export function routingInfo(call: RoutedCall, c: CandidateDoc, failures: readonly string[]): RoutingInfo {
  // The codes first, in brackets and separated by spaces, for programs; then the sentences, for people.
  let reason = `[${call.selection.codes.join(' ')}${failures.length ? ' fallback' : ''}] ${call.selection.reason}`;
  if (failures.length) reason += ` Fell back to ${c.model}, the next eligible model, after: ${failures.join('; ')}.`;
  const e = call.plan.effective;
  return { selected_model: c.model, reasoning_effort: e ? call.ingress.effortLabel(e) : null, reason, conversation_id: call.convId };
}

/** After a successful call: remember the conversation's model, count the tokens and settle the admissions. None delays the answer. */
export function settle(call: RoutedCall, c: CandidateDoc, usage: Usage, stickiness: Stickiness, usageBuffer: UsageBuffer): void {
  const { sticky, plan } = call;
  const stickyGone = sticky && !call.selection.order.some((x) => x.model === sticky.model);
  if (!sticky || stickyGone || (plan.updates && sticky.request_effort == null)) {
    const rec: StickyRecord = { model: stickyGone || !sticky ? c.model : sticky.model, request_effort: plan.updates ? plan.requestLevel : (sticky?.request_effort ?? null) };
    stickiness.set(call.orgId, call.router.router_id, call.convId, rec).catch((err) => call.log().warn({ err }, 'could not store routing stickiness'));
  }
  const input = recordedInput(usage, c.provider);
  const usd = usageBuffer.add(call.orgId, { routerId: call.router.router_id, ...call.billedTo }, c.model, input, usage.outputTokens, candidatePrice(c));
  call.settled = true;
  if (call.held.length) settleAll(call.held, { tokens: input + usage.outputTokens, usd });
}

/**
 * The routing interface's selection counts, by why the model answered: `fallback` (an earlier candidate failed or
 * timed out), `sticky`, what health changed (`breaker_open`, `probe`, `all_open`, `lower_ttft`, `lower_answer_time`),
 * else `first` (the policy's first). `metrics` is absent in unit tests.
 */
export function countSelected(metrics: Metrics | undefined, call: RoutedCall, c: CandidateDoc, failures: readonly string[]): void {
  const codes = call.selection.codes;
  const reason = failures.length ? 'fallback' : call.sticky?.model === c.model ? 'sticky' : codes.length > 1 ? healthReason(codes[1]) : 'first';
  metrics?.routerSelections.inc(SELECTIONS.of(c.model, reason));
}

/** A candidate that failed before committing, on every kind of routed call alike: one count and one log line. */
export function recordFallback(metrics: Metrics | undefined, call: RoutedCall, c: CandidateDoc, e: UpstreamError): void {
  metrics?.routerFallbacks.inc(FALLBACKS.of(c.model));
  call.log().warn({ model: c.model, err: e.message }, 'routing fallback');
}

/** A health code without its model: a bounded label. */
const healthReason = (code: string): string => {
  const i = code.indexOf(':');
  return i < 0 ? code : code.slice(0, i);
};

const SELECTIONS = new LabelSets<{ model: string; reason: string }>(['model', 'reason']);
const FALLBACKS = new LabelSets<{ model: string }>(['model']);

/** An upstream failure that is not retried, or the last one, as the client sees it. */
export function upstreamFailure(e: unknown, failures: readonly string[]): unknown {
  if (!(e instanceof UpstreamError)) return e;
  if (e.code === UPSTREAM_TOO_LARGE) return new TroupeError(502, ErrorType.api, UPSTREAM_TOO_LARGE, `The selected model's answer was too large: ${e.message}`);
  if (!e.retryable && (e.status === 400 || e.status === 404 || e.status === 422)) {
    return new TroupeError(400, ErrorType.invalidRequest, 'upstream_rejected', `The selected model rejected the request: ${e.message}`);
  }
  if (e.status === 413) return new TroupeError(413, ErrorType.tooLarge, 'upstream_rejected', e.message);
  const all = [...failures, e.message].join('; ');
  return new TroupeError(502, ErrorType.api, 'upstream_error', `No eligible model could answer: ${all}`);
}

/** Every eligible candidate failed with a retryable error. */
export function exhausted(failures: readonly string[]): TroupeError {
  return new TroupeError(502, ErrorType.api, 'upstream_error', `No eligible model could answer: ${failures.join('; ')}`);
}

export const isRetryable = (e: unknown): e is UpstreamError => e instanceof UpstreamError && e.retryable;
