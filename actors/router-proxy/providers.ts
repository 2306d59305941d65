import type { SecretBox } from '../../src/lib/crypto/secret-box.js';
import type { MessageState } from '../../src/domain/ledger.js';
import { Accumulator } from '../../src/lib/llm/accumulate.js';
import { DEFAULT_BASE_URL, type Provider } from '../../src/domain/providers.js';
import type { LlmClient } from '../../src/lib/llm/client.js';
import { UpstreamError } from '../../src/lib/llm/errors.js';
import { recordedInput, type LlmRequest, type Target } from '../../src/lib/llm/types.js';
import { SessionSecrets, sessionLlmKey } from '../../src/lib/crypto/session-secrets.js';
import type { AgentVersionDoc } from '../../src/store/agents.js';
import type { LlmOption } from '../../src/domain/agent.js';
import type { Price } from '../../src/store/usage.js';
import type { SessionDoc } from '../../src/domain/views/session.js';
import { TroupeError } from '../../src/domain/errors.js';
import type { Logger } from '../../src/lib/log/logger.js';
import { routeInProcess } from '../../src/lib/routing/route-in-process.js';
import { RateLimitError } from '../../src/domain/errors.js';
import type { InProcessRouting } from '../../src/lib/routing/route-in-process.js';
import type { ModelCall, ModelResult } from '../../src/domain/actors/session.js';
import { CANCELLED } from './decide.js';
import { conversationItems, responseParts, sentMessages } from './transcript.js';
import { PartRefused, resolveFileParts, type FileSource } from '../../src/lib/llm/file-parts.js';
import type { Item } from '../../src/lib/llm/types.js';
import type { UsageBuffer } from '../../src/lib/routing/usage-buffer.js';
import { agentRequest } from './agent-request.js';
import type { BudgetCharge, Budgets, HeldCharge } from '../../src/lib/budgets/budgets.js';
import { thresholdData } from '../../src/lib/budgets/threshold-data.js';

/** The llm option's price, when the manifest sets one. */
function optionPrice(o: LlmOption): Price | null {
  return o.input_price !== undefined && o.output_price !== undefined ? { input_price: o.input_price, output_price: o.output_price, currency: o.currency ?? 'USD' } : null;
}

/** The conversation with file and image parts loaded; a part no provider can take is a failure that is not retried. */
async function conversation(deps: ProviderDeps, session: SessionDoc, current: MessageState): Promise<Item[] | ModelResult> {
  const history = await deps.history(session);
  try {
    const files = await resolveFileParts(deps.files, session.org_id, sentMessages(history, current).flatMap((m) => m.parts));
    return conversationItems(history, current, files);
  } catch (e) {
    if (e instanceof PartRefused) return { ok: false, error: `A content part cannot be sent to the model: ${e.message}`, retryable: false };
    throw e;
  }
}

export interface ProviderDeps {
  client: LlmClient;
  /** The org's router in-process, for provider `routing`. */
  routing: InProcessRouting;
  log: Logger;
  box: SecretBox;
  revealCredential(orgId: string, name: string): Promise<string | null>;
  history(session: SessionDoc): Promise<MessageState[]>;
  /** Token counts and cost of the session's model calls (the routing interface's buffer). */
  usage: UsageBuffer;
  /** Spend budgets (org, the session's key, the session); absent, none is enforced. */
  budgets?: Budgets;
  /** Bytes of file and image parts, scoped by org. */
  files: FileSource;
  /** Ephemeral text deltas for SSE clients that asked for them. */
  publishDelta(sessionId: string, delta: Record<string, unknown>): void;
}

/**
 * The provider key for a model call: the session's `llm_api_key` first,
 * else the option's named credential, resolved as any session secret is
 * (the session's secret of that name, else the org's stored credential).
 * Used for model calls only.
 */
async function providerKey(deps: ProviderDeps, session: SessionDoc, option: LlmOption, secrets: SessionSecrets): Promise<string | null> {
  const own = sessionLlmKey(deps.box, session);
  if (own !== null) return own;
  if (!option.api_key_credential) return null;
  return secrets.get(option.api_key_credential);
}

function request(version: AgentVersionDoc, items: LlmRequest['items']): LlmRequest {
  const config = version.agent_config;
  // The entrypoint may offer the model a subset of the manifest's tools.
  const offered = config?.tools ? version.tools.filter((t) => config.tools!.includes(t.name)) : version.tools;
  return {
    system: config?.instructions,
    items,
    tools: offered.map((t) => ({ name: t.name, description: t.description ?? undefined, parameters: t.input_schema ?? { type: 'object', properties: {} } })),
    maxTokens: 4096,
    stream: true,
  };
}

/** One model call in the provider's native format, streamed so deltas reach SSE clients as they arrive. */
/**
 * The budgets a session's model call counts against, checked before it is made: a spent one fails the message
 * with `budget_exceeded` (not retried), so a turn queued before the budget ran out ends there. Nothing is reserved:
 * a session runs one call at a time, so a session budget overshoots by at most that call.
 */
export async function admitTurnCall(deps: Pick<ProviderDeps, 'budgets'>, session: SessionDoc): Promise<HeldCharge | null | ModelResult> {
  const budgets = deps.budgets;
  if (!budgets) return null;
  const refs = await budgets.refsOf(session.org_id, null, session);
  if (!refs.length) return null;
  try {
    await budgets.check(session.org_id, refs);
  } catch (e) {
    if (e instanceof TroupeError && e.code === 'budget_exceeded') return { ok: false, error: `budget_exceeded: ${e.message}`, retryable: false, code: e.code };
    throw e;
  }
  return budgets.held({ orgId: session.org_id, refs });
}

/** The thresholds a settled call crossed on the session's own budget: recorded in its ledger with the answer. */
async function sessionCrossings(charge: BudgetCharge | null | undefined, now: number): Promise<{ budget_thresholds?: ReturnType<typeof thresholdData>[] }> {
  const crossed = charge?.settled ? await charge.settled : [];
  const own = crossed.filter((c) => c.ref.scope === 'session');
  return own.length ? { budget_thresholds: own.map((c) => thresholdData(c, now)) } : {};
}

export async function callProvider(deps: ProviderDeps, session: SessionDoc, version: AgentVersionDoc, option: LlmOption, call: ModelCall, current: MessageState, signal?: AbortSignal, charge?: BudgetCharge | null): Promise<ModelResult> {
  const provider = option.provider as Provider;
  const secrets = new SessionSecrets({ box: deps.box, reveal: (orgId, name) => deps.revealCredential(orgId, name) }, session);
  const apiKey = await providerKey(deps, session, option, secrets);
  if (!apiKey) return { ok: false, error: `No API key for ${option.provider}: set llm_api_key on the session or api_key_credential on llm option ${option.id}.` };
  const target: Target = { provider, model: option.model ?? '', baseUrl: option.base_url ?? DEFAULT_BASE_URL[provider], apiKey, redact: secrets.ownValues() };
  let req: LlmRequest;
  if (call.request) {
    req = agentRequest(version, call.request);
  } else {
    const items = await conversation(deps, session, current);
    if (!Array.isArray(items)) return items;
    req = request(version, items);
  }
  const acc = new Accumulator();
  try {
    for await (const ev of deps.client.stream(req, target, signal)) {
      acc.push(ev);
      // A cancelled message's call stops here; no delta leaves after the abort.
      if (signal?.aborted) return CANCELLED;
      if (ev.type === 'text') deps.publishDelta(session._id, { type: 'assistant.delta', message_id: call.message_id, call_index: call.call_index, text: ev.text });
    }
  } catch (e) {
    if (signal?.aborted) return CANCELLED;
    if (e instanceof UpstreamError) {
      return { ok: false, error: e.message, retryable: e.retryable, ...(e.retryAfterMs !== undefined ? { retry_after_ms: e.retryAfterMs } : {}) };
    }
    return { ok: false, error: `model call failed: ${(e as Error).message}`, retryable: true };
  }
  const res = acc.result();
  // Counted from the stream's own usage, exactly as a non-streamed call would be.
  const input = recordedInput(res.usage, target.provider);
  deps.usage.add(session.org_id, { routerId: null, agentId: session.agent_id, sessionId: session._id, charge }, option.model ?? provider, input, res.usage.outputTokens, optionPrice(option));
  const { parts, stop_reason } = responseParts(res);
  return { ok: true, parts, stop_reason, usage: { input_tokens: input, output_tokens: res.usage.outputTokens }, ...(await sessionCrossings(charge, Date.now())) };
}

/** Provider `routing`: the org's router (the option's `router_id`, else the default one) picks the model. */
export async function callRouter(deps: ProviderDeps, session: SessionDoc, version: AgentVersionDoc, option: LlmOption, current: MessageState, signal?: AbortSignal, agentCall?: Record<string, unknown>, charge?: HeldCharge | null): Promise<ModelResult> {
  let req: LlmRequest;
  if (agentCall) {
    req = { ...agentRequest(version, agentCall), stream: false };
  } else {
    const items = await conversation(deps, session, current);
    if (!Array.isArray(items)) return items;
    req = { ...request(version, items), stream: false };
  }
  try {
    const res = await routeInProcess(deps.routing, session.org_id, option.router_id ?? null, req, deps.log, { agentId: session.agent_id, sessionId: session._id }, signal, charge);
    const { parts, stop_reason } = responseParts(res);
    return { ok: true, parts, stop_reason, usage: { input_tokens: recordedInput(res.usage, res.provider), output_tokens: res.usage.outputTokens }, ...(await sessionCrossings(charge, Date.now())) };
  } catch (e) {
    if (signal?.aborted) return CANCELLED;
    if (e instanceof UpstreamError) return { ok: false, error: e.message, retryable: e.retryable, ...(e.retryAfterMs !== undefined ? { retry_after_ms: e.retryAfterMs } : {}) };
    // The org's routing rate is spent: the turn waits until the window allows it, as a throttled upstream's would.
    if (e instanceof RateLimitError) return { ok: false, error: `routing: ${e.message}`, retryable: true, retry_after_ms: Number(e.headers?.['Retry-After'] ?? 1) * 1000 };
    // Every candidate failed (502) is worth another attempt; a router that cannot serve the request is not.
    if (e instanceof TroupeError) return { ok: false, error: `routing: ${e.message}`, retryable: e.status >= 500 };
    return { ok: false, error: `routing failed: ${(e as Error).message}`, retryable: true };
  }
}
