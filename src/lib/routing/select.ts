import { InvalidRequestError } from '../../domain/errors.js';
import type { LlmRequest, Part } from '../llm/types.js';
import type { Effort } from '../../domain/providers.js';
import type { CandidateDoc, RouterDoc } from '../../domain/views/router.js';

/** What a request asks of a model. */
export interface Needs {
  effort?: Effort;
  /** The effort as the client wrote it (`none` on responses), for messages. */
  effortLabel?: string;
  tools: boolean;
  thinking: boolean;
  promptTokens: number;
  maxTokens: number;
}

export interface Selection {
  /** Eligible candidates, the chosen one first, then the fallbacks in order. */
  order: CandidateDoc[];
  reason: string;
  /**
   * The reason as codes, for programs: the policy (`priority`, `cheapest`) or `sticky`, then what health changed
   * (`breaker_open:<model>`, `probe:<model>`, `all_open`, `lower_ttft`, `lower_answer_time`) and what failed
   * (`timeout:<model>`, `failed:<model>`). Per call: route-call adds to it.
   */
  codes: string[];
}

const IMAGE_TOKENS = 1600;

/** About four characters per token, and a flat cost per image; cheap, and only used against context windows. */
export function estimateTokens(req: LlmRequest): number {
  let chars = (req.system ?? '').length;
  const parts = (ps: Part[]) => ps.reduce((n, p) => n + (p.type === 'text' ? p.text.length : IMAGE_TOKENS * 4), 0);
  for (const it of req.items) {
    if (it.kind === 'message' || it.kind === 'tool_result') chars += parts(it.content);
    else if (it.kind === 'tool_call') chars += it.name.length + it.arguments.length;
  }
  for (const t of req.tools ?? []) chars += t.name.length + (t.description?.length ?? 0) + JSON.stringify(t.parameters).length;
  return Math.ceil(chars / 4);
}

export function needsOf(req: LlmRequest, effort: Effort | undefined, effortLabel: string | undefined): Needs {
  return {
    effort,
    effortLabel,
    tools: (req.tools?.length ?? 0) > 0 || req.items.some((it) => it.kind === 'tool_call' || it.kind === 'tool_result'),
    thinking: req.thinking !== undefined,
    promptTokens: estimateTokens(req),
    maxTokens: req.maxTokens ?? 0,
  };
}

/** Why a candidate cannot serve the request, or null when it can. */
export function ineligibility(c: CandidateDoc, n: Needs): string | null {
  if (n.effort && !c.reasoning_efforts.includes(n.effort)) return `does not support reasoning effort ${n.effortLabel ?? n.effort}`;
  if (n.tools && !c.tools) return 'does not support tools';
  if (n.thinking && !c.thinking) return 'does not support extended thinking';
  if (n.promptTokens + n.maxTokens > c.context_window) return `its context window of ${c.context_window} tokens is smaller than the request (about ${n.promptTokens} prompt + ${n.maxTokens} output tokens)`;
  return null;
}

function noneEligible(router: RouterDoc, n: Needs, skipped: string[]): InvalidRequestError {
  const byEffort = n.effort && router.candidates.every((c) => !c.reasoning_efforts.includes(n.effort!));
  const head = byEffort
    ? `No model of router ${router.router_id} supports reasoning effort ${n.effortLabel ?? n.effort}.`
    : `No model of router ${router.router_id} can serve this request.`;
  return new InvalidRequestError(`${head} ${skipped.join('; ')}.`, byEffort ? 'reasoning_effort' : undefined, 'no_eligible_model');
}

/**
 * Selection in the order the design gives: eligibility, then the router's
 * policy, then stickiness (a conversation stays on its model while that
 * model is still eligible). Pure, so it is unit-tested directly.
 */
export function select(router: RouterDoc, n: Needs, stickyModel: string | null): Selection {
  const skipped: string[] = [];
  const eligible = router.candidates.filter((c) => {
    const why = ineligibility(c, n);
    if (why) skipped.push(`${c.model} ${why}`);
    return !why;
  });
  if (eligible.length === 0) throw noneEligible(router, n, skipped);
  const ranked = router.policy === 'cheapest' ? [...eligible].sort((a, b) => a.input_price + a.output_price - (b.input_price + b.output_price)) : eligible;
  const sticky = stickyModel ? ranked.find((c) => c.model === stickyModel) : undefined;
  const order = sticky ? [sticky, ...ranked.filter((c) => c !== sticky)] : ranked;
  const chosen = order[0];
  let reason: string;
  if (sticky) reason = `${chosen.model} was kept because this conversation started on it and it is still eligible.`;
  else if (router.policy === 'cheapest') reason = `${chosen.model} is the cheapest eligible model (${chosen.input_price} + ${chosen.output_price} per million input + output tokens).`;
  else reason = `${chosen.model} is the first eligible model in the router's priority order.`;
  if (stickyModel && !sticky) reason += ` The conversation's earlier model ${stickyModel} is no longer eligible.`;
  if (skipped.length) reason += ` Skipped: ${skipped.join('; ')}.`;
  return { order, reason, codes: [sticky ? 'sticky' : router.policy] };
}
