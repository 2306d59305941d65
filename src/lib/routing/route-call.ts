import type { LlmClient } from '../llm/client.js';
import type { Cancel } from '../llm/upstream-post.js';
import type { LlmRequest, Target, Usage } from '../llm/types.js';
import type { Logger } from '../log/logger.js';
import type { Metrics } from '../metrics/metrics.js';
import type { CandidateDoc, RouterDoc } from '../../domain/views/router.js';
import { conversationId, type Stickiness } from './conversation.js';
import { checkEffortUnchanged, planEffort } from './effort.js';
import type { CandidateHealth, Timing } from './health.js';
import type { Ingress } from './ingress.js';
import type { RoutingLookup } from './lookup.js';
import { countSelected, exhausted, isRetryable, recordFallback, requestFor, settle, upstreamFailure, type RoutedCall } from './routed-call.js';
import { needsOf, select } from './select.js';
import { AttemptDeadline } from './attempt-deadline.js';
import type { UsageBuffer } from './usage-buffer.js';
import { abandon, admitAll, type Admission, type Admitted } from './admission.js';

/** What a routed call runs on, in the routing app and in the router-proxy actor alike. */
export interface RoutingServices {
  lookup: RoutingLookup;
  client: LlmClient;
  stickiness: Stickiness;
  usage: UsageBuffer;
  metrics?: Metrics;
  /** Circuit breakers and latency; absent, every eligible candidate is tried in the policy's order. */
  health?: CandidateHealth;
  /** ROUTER_ATTEMPT_TIMEOUT_MS: an attempt that has not committed by then is abandoned as a retryable failure; 0 or absent = none. */
  attemptTimeoutMs?: number;
}

/** What the caller knows before routing: the org, its router (each caller reads it at its own point among its checks), the request. */
export interface RouteInput {
  orgId: string;
  router: RouterDoc;
  ingress: Ingress;
  req: LlmRequest;
  /** The request's logger, made on first use. */
  log: () => Logger;
  billedTo?: RoutedCall['billedTo'];
  /**
   * The checks the call must pass before any upstream is called, already started (their round trips overlap the
   * decision), awaited in this order: the first refusal is the answer.
   */
  admissions?: readonly Admission[];
}

/**
 * How one kind of routed call makes a candidate's attempt and answers with it: a buffered JSON body, an SSE relay
 * whose first content commits to the candidate, or an LlmResponse for a caller inside Troupe. Modes are constants;
 * what differs per call is `x` (the HTTP exchange, or the caller's abort signal).
 */
export interface CallMode<A, R, X> {
  /** What an attempt's duration measures, for the latency preference: the whole answer, or the first content. */
  readonly timing: Timing;
  /**
   * Once the call is decided and admitted, before the first attempt: the cancellation the attempts run under (the
   * client's hang-up, watched from here on as it always was; the routing app also sets X-Conversation-Id here).
   */
  start(call: RoutedCall, x: X): Cancel | undefined;
  /** One candidate's call, up to the moment that commits to it. A retryable failure before then falls back. */
  attempt(client: LlmClient, req: LlmRequest, target: Target, signal: Cancel | undefined): Promise<A>;
  /** The usage of an answer that is whole when committed; null for a stream, which settles on its finish event. */
  usage(a: A): Usage | null;
  /** The committed candidate's answer; `failures` are the candidates that fell back before it. */
  answer(a: A, call: RoutedCall, c: CandidateDoc, failures: readonly string[], svc: RoutingServices, x: X): R | Promise<R>;
  /** What the call ends with when its caller went away during an attempt. */
  cancelled(e: unknown, failures: readonly string[]): R;
}

/** No candidate failed: the common case allocates no list. */
const NO_FAILURES: readonly string[] = Object.freeze([]);
const NO_ADMISSIONS: readonly Admission[] = Object.freeze([]);

/**
 * One routed call: decide (effort rules, conversation id, stickiness, selection), then try each eligible candidate in
 * order until one answers, settling the chosen one (stickiness, usage) and counting every fallback. The one place
 * that order is written; `mode` says how an attempt is made and answered.
 */
export async function routeCall<A, R, X>(svc: RoutingServices, input: RouteInput, mode: CallMode<A, R, X>, x: X): Promise<R> {
  const { orgId, router, ingress, req } = input;
  const admissions = input.admissions ?? NO_ADMISSIONS;
  const health = svc.health;
  let call: RoutedCall;
  let order: RoutedCall['selection']['order'];
  try {
    const plan = planEffort(req);
    const convId = conversationId(req);
    const sticky = await svc.stickiness.get(orgId, router.router_id, convId);
    checkEffortUnchanged(plan, sticky?.request_effort, ingress.effortLabel);
    const label = plan.effective && ingress.effortLabel(plan.effective);
    let selection = select(router, needsOf(req, plan.effective, label), sticky?.model ?? null);
    // The breakers and latency change the order tried, never the eligible list: settle's stickiness reads that, so a
    // conversation whose model is only open for a while comes back to it.
    order = selection.order;
    if (health) {
      let hp = health.plan(orgId, router, order, mode.timing, sticky?.model === order[0].model);
      if (hp instanceof Promise) hp = await hp;
      order = hp.order;
      if (hp.note) selection = { order: selection.order, reason: `${selection.reason} ${hp.note}`, codes: [...selection.codes, ...hp.codes] };
    }
    call = { orgId, router, ingress, req, plan, convId, sticky, selection, log: input.log, billedTo: input.billedTo, held: NONE_HELD, settled: false };
  } catch (e) {
    return abandon(admissions, e);
  }
  if (admissions.length) call.held = await admitAll(admissions);
  try {
    const signal = mode.start(call, x);
    let failures = NO_FAILURES as string[];
    const timeoutMs = svc.attemptTimeoutMs ?? 0;
    for (const c of order) {
      let a: A;
      const t0 = health ? performance.now() : 0;
      const deadline = timeoutMs > 0 ? new AttemptDeadline(signal, timeoutMs, c.model) : null;
      try {
        // A cached provider key answers at once: no await on the hot path.
        let target = svc.lookup.target(orgId, c);
        if (target instanceof Promise) target = await target;
        a = await mode.attempt(svc.client, requestFor(call, c), target, deadline ?? signal);
        deadline?.committed();
      } catch (e) {
        deadline?.committed();
        // A cancelled caller gets no fallback to the next candidate.
        if (signal?.aborted) return mode.cancelled(e, failures);
        if (deadline?.expired) e = deadline.reason;
        if (!isRetryable(e)) throw upstreamFailure(e, failures);
        if (failures === NO_FAILURES) failures = [];
        failures.push(`${c.model}: ${e.message}`);
        call.selection.codes.push(`${deadline?.expired ? 'timeout' : 'failed'}:${c.model}`);
        recordFallback(svc.metrics, call, c, e);
        if (health) await health.failed(orgId, router.router_id, c);
        continue;
      }
      health?.succeeded(orgId, router.router_id, c, performance.now() - t0, mode.timing);
      const usage = mode.usage(a);
      if (usage) settle(call, c, usage, svc.stickiness, svc.usage);
      countSelected(svc.metrics, call, c, failures);
      // A stream settles on its finish event, while its answer is awaited: only then may `finally` see it unsettled.
      const r = mode.answer(a, call, c, failures, svc, x);
      return r instanceof Promise ? await r : r;
    }
    throw exhausted(failures);
  } finally {
    // A call that ended without usage (failed, cancelled, a stream cut before its finish) gives back what it holds.
    if (!call.settled) for (const a of call.held) a.release();
  }
}

const NONE_HELD: readonly Admitted[] = Object.freeze([]);
