import assert from 'node:assert/strict';
import type { ActorContext } from '../../actors/runtime/actor.js';
import { routerProxyActor } from '../../actors/router-proxy/actor.js';
import type { SessionJob } from '../../src/domain/actors/session.js';
import { toolRunnerActor } from '../../actors/tool-runner/actor.js';

const ERROR = 'processing_budget_exceeded: processing this message stopped its worker 3 times; it was stopped and will not run again.';
const ctx = {} as ActorContext<never>;

/** The activities answer the session when their work is quarantined, so no message waits for an answer that never comes. */
describe('quarantined activity work answers the session', () => {
  it('a model call answers a failed, not retryable, model.responded carrying the error', async () => {
    const out = await routerProxyActor.onQuarantine!(ctx, { org_id: 'o', session_id: 's', message_id: 'm', attempt: 1, call_index: 2 }, ERROR);
    const command = (out.sends![0].data as SessionJob).command;
    assert.deepEqual(command, { kind: 'model.responded', command_id: 'resp-m-1-2', message_id: 'm', attempt: 1, call_index: 2, result: { ok: false, error: ERROR, retryable: false } });
  });

  it('a tool run answers an error result carrying the error', async () => {
    const out = await toolRunnerActor.onQuarantine!(ctx, { org_id: 'o', session_id: 's', message_id: 'm', attempt: 1, tool_call_id: 'c', tool_name: 't', arguments: {} }, ERROR);
    const command = (out.sends![0].data as SessionJob).command;
    assert.equal(command.kind, 'tool.completed');
    assert.deepEqual((command as Extract<typeof command, { kind: 'tool.completed' }>).result, { ok: false, error: ERROR });
  });
});
