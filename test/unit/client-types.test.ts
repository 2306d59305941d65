import assert from 'node:assert/strict';
import type { Api, EventOf, SessionEvent, StreamItem, WebhookBody } from '../../clients/typescript/src/index.js';

/**
 * Type-level checks of the generated client, compiled with the build: if the
 * codegen stops narrowing events by `type` (say `data` widens back to a
 * record of unknowns, or to `any`), the assignments below stop compiling or
 * the `@ts-expect-error` lines stop being errors, and the build fails.
 */

/** What a caller reads off each event, through narrowing alone: no casts. */
function describeEvent(ev: StreamItem): string {
  switch (ev.type) {
    case 'user.message': {
      const first: Api.UserMessageEvent['data']['content'][number] = ev.data.content[0];
      const meta: Record<string, string> | null = ev.data.metadata;
      return `user ${first.type} ${meta ? Object.keys(meta).length : 0}`;
    }
    case 'tool.call_requested': {
      const id: string = ev.data.tool_call_id;
      const submit: string = ev.data.submit_url;
      // @ts-expect-error a tool call request has no `reason`
      void ev.data.reason;
      return `requested ${id} ${submit}`;
    }
    case 'tool.call_failed': {
      const reason: 'timeout' | 'error' | 'unknown_tool' | 'cancelled' | 'denied' = ev.data.reason;
      const kind: 'custom' | 'external' | null = ev.data.kind;
      return `failed ${reason} ${kind}`;
    }
    case 'message.status_changed': {
      const to: Api.MessageStatusChangedEvent['data']['to'] = ev.data.to;
      const retry: number | undefined = ev.data.retry_in_ms;
      return `message ${ev.data.from} ${to} ${retry ?? '-'}`;
    }
    case 'session.status_changed': {
      // @ts-expect-error a session status change has no tool_call_id
      void ev.data.tool_call_id;
      const to: 'idle' | 'running' = ev.data.to;
      return `session ${to}`;
    }
    case 'assistant.message_completed': {
      const texts: string[] = ev.data.parts.flatMap((p) => (p.type === 'text' ? [p.text] : []));
      const usage: number | undefined = ev.data.usage?.output_tokens;
      return `assistant ${texts.join('')} ${usage} ${ev.data.final}`;
    }
    case 'tool.result_submitted':
      return `result ${ev.data.tool_call_id} ${ev.data.is_error}`;
    case 'tool.call_completed':
      return `completed ${ev.data.tool_name}`;
    case 'webhook.delivery_failed': {
      const attempts: number = ev.data.attempts;
      return `webhook ${ev.data.event_type} ${attempts}`;
    }
    case 'budget.threshold_reached': {
      const pct: 80 | 100 = ev.data.threshold;
      return `budget ${ev.data.scope} ${pct}`;
    }
    case 'assistant.delta': {
      const text: string = ev.data.text;
      return `delta ${text}`;
    }
    case 'tool.confirmation_requested': {
      const expires: string = ev.data.expires_at;
      return `confirm ${ev.data.tool_name} ${expires}`;
    }
    case 'user.tool_confirmation': {
      const result: 'allow' | 'deny' = ev.data.result;
      return `confirmation ${result} ${ev.data.deny_message ?? '-'}`;
    }
    case 'agent.call_started': {
      const kind: 'model' | 'tool' | 'sleep' = ev.data.kind;
      return `call ${ev.data.position} ${kind} ${ev.data.name}`;
    }
    case 'agent.call_completed':
    case 'agent.call_failed':
      return `call ${ev.data.position} ended`;
    case 'agent.progress':
      return `progress ${ev.data.text}`;
  }
}

function describeWebhook(body: WebhookBody): string {
  switch (body.type) {
    case 'tool.call_requested':
      return `tool ${body.tool_name} ${body.expires_at}`;
    case 'tool.confirmation_requested':
      return `confirm ${body.tool_name} ${body.submit_url}`;
    case 'session.completed':
    case 'session.failed': {
      const last: string | null = body.data.last_message_status;
      return `session ${body.data.session_id} ${last}`;
    }
    case 'budget.threshold_reached': {
      const pct: 80 | 100 = body.data.threshold;
      return `budget ${body.data.scope} ${pct}`;
    }
    default: {
      // @ts-expect-error batch bodies carry no session_id
      void body.data.session_id;
      return `batch ${body.data.batch_id} ${body.data.counts?.completed}`;
    }
  }
}

const envelope = { id: 'ses_1:1', session_id: 'ses_1', sequence_number: 1, message_id: 'msg_1', source: 'platform', actor: { type: 'system', id: null }, created_at: '2026-11-24T00:00:00.000Z' } as const;

describe('client types: events and webhook bodies narrow on `type`', () => {
  it('reads each type’s fields without a cast', () => {
    const failed: EventOf<'tool.call_failed'> = { ...envelope, type: 'tool.call_failed', data: { message_id: 'msg_1', tool_call_id: 'c1', tool_name: 'x', kind: null, reason: 'unknown_tool', error: 'no tool x' } };
    const retry: SessionEvent = { ...envelope, type: 'message.status_changed', data: { message_id: 'msg_1', from: 'running', to: 'running', attempt: 2, error: '503', retry_in_ms: 1000 } };
    assert.equal(describeEvent(failed), 'failed unknown_tool null');
    assert.equal(describeEvent(retry), 'message running running 1000');
    assert.equal(describeEvent({ type: 'assistant.delta', data: { type: 'assistant.delta', message_id: 'msg_1', call_index: 0, text: 'Hel' } }), 'delta Hel');
    const batch: WebhookBody = { id: 'bat_1:batch.completed', type: 'batch.completed', created_at: envelope.created_at, data: { batch_id: 'bat_1', agent_id: 'agt_1', status: 'completed', counts: { queued: 0, running: 0, completed: 2, failed: 0 } } };
    assert.equal(describeWebhook(batch), 'batch bat_1 2');
  });
});
