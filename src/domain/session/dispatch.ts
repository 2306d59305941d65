import { toolCallEventId, toolConfirmationEventId, webhookJobId, type WebhookJob } from '../actors/webhook.js';
import type { ToolDef } from '../agent.js';
import type { NewEvent, MessageState, OutputPart } from '../ledger.js';
import type { Effect } from '../actors/session.js';
import { confirmationDeadline, platform, toolDeadline, toolRun, type DecideInput } from './decision.js';

export type ToolCall = Extract<OutputPart, { type: 'tool_call' }>;

/** What one tool call of a model response becomes; `waits_on_client`: the message is `requires_action` for it. */
export interface Dispatched {
  events: NewEvent[];
  effects: Effect[];
  waits_on_client: boolean;
}

/**
 * A call the model made, run as its tool's kind says: an external call is requested from the client (event,
 * webhook, deadline), a custom one goes to the tool-runner. `confirmed`: the client allowed an `always_ask`
 * call, so it runs now; otherwise such a call asks first (`askConfirmation`) and nothing runs yet.
 */
export function dispatchCall(input: DecideInput, m: MessageState, c: ToolCall, tool: ToolDef, confirmed = false): Dispatched {
  if (tool.permission === 'always_ask' && !confirmed) return askConfirmation(input, m, c, tool);
  const { agent } = input;
  if (tool.kind === 'external') {
    const expires = new Date(agent.now.getTime() + tool.timeout_seconds * 1000);
    const body = { id: toolCallEventId(input.session.id, m.id, c.id), type: 'tool.call_requested' as const, session_id: input.session.id, message_id: m.id, tool_call_id: c.id, tool_name: c.name, arguments: c.arguments, input_schema: tool.input_schema ?? {}, output_schema: tool.output_schema ?? {}, expires_at: expires.toISOString(), submit_url: agent.submit_url };
    const job: WebhookJob = { kind: 'tool.call_requested', org_id: agent.org_id, agent_id: agent.agent_id, session_id: input.session.id, body };
    return {
      events: [platform('tool.call_requested', m.id, { ...body })],
      effects: [{ kind: 'webhook', job_id: webhookJobId(job), job }, toolDeadline(m, c.id, tool.timeout_seconds * 1000)],
      waits_on_client: true,
    };
  }
  return { events: [], effects: [toolRun(input, m, c)], waits_on_client: false };
}

/**
 * An `always_ask` call: recorded as `tool.confirmation_requested`, pushed to the webhook, and given a deadline
 * like an external call's (its timeout_seconds). The message then waits in the ledger and a delayed job only:
 * no worker, no process holds it, so it survives restarts.
 */
function askConfirmation(input: DecideInput, m: MessageState, c: ToolCall, tool: ToolDef): Dispatched {
  const { agent } = input;
  const expiresAt = new Date(agent.now.getTime() + tool.timeout_seconds * 1000).toISOString();
  const data = { message_id: m.id, tool_call_id: c.id, tool_name: c.name, arguments: c.arguments, expires_at: expiresAt };
  const body = { id: toolConfirmationEventId(input.session.id, m.id, c.id), type: 'tool.confirmation_requested' as const, session_id: input.session.id, ...data, submit_url: agent.submit_url };
  const job: WebhookJob = { kind: 'tool.confirmation_requested', org_id: agent.org_id, agent_id: agent.agent_id, session_id: input.session.id, body };
  return {
    events: [platform('tool.confirmation_requested', m.id, data)],
    effects: [{ kind: 'webhook', job_id: webhookJobId(job), job }, confirmationDeadline(m, c.id, tool.timeout_seconds * 1000)],
    waits_on_client: true,
  };
}
