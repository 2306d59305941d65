import assert from 'node:assert/strict';
import { answer, callTarget, CANCELLED, liveCall, needsSession, route } from '../../actors/router-proxy/decide.js';
import { modelAnswerCommandId, SESSION, sessionJobId, type ModelCall, type ModelResult } from '../../src/domain/actors/session.js';
import type { MessageState } from '../../src/domain/ledger.js';
import type { AgentVersionDoc } from '../../src/store/agents.js';
import type { LlmOption } from '../../src/domain/agent.js';
import type { SessionDoc } from '../../src/domain/views/session.js';

const call = (over: Partial<ModelCall> = {}): ModelCall => ({ org_id: 'org_1', session_id: 'ses_1', message_id: 'msg_1', attempt: 1, call_index: 2, version_id: 'ver_1', llm_id: 'main', ...over });
const session = { _id: 'ses_1', org_id: 'org_1', version_id: 'ver_s', llm_id: 'from_session' } as SessionDoc;
const option = (provider: LlmOption['provider'], id = 'main'): LlmOption => ({ id, provider });
const version = (options: LlmOption[], scripts: AgentVersionDoc['scripts'] = {}) => ({ _id: 'ver_1', llm_options: options, scripts }) as AgentVersionDoc;
const message = (status: MessageState['status']) => ({ id: 'msg_1', status }) as MessageState;
const fail = (error: string) => ({ kind: 'fail', result: { ok: false, error } });

describe('router-proxy decisions', () => {
  it('reads the session only for a call that does not name its version and llm option', () => {
    assert.equal(needsSession(call()), false);
    assert.equal(needsSession(call({ version_id: undefined })), true);
    assert.equal(needsSession(call({ llm_id: undefined })), true);
  });

  describe('callTarget', () => {
    it("goes to the version and option the call names, else the session's", () => {
      assert.deepEqual(callTarget(call(), undefined), { kind: 'target', version_id: 'ver_1', llm_id: 'main' });
      assert.deepEqual(callTarget(call({ version_id: undefined, llm_id: undefined }), session), { kind: 'target', version_id: 'ver_s', llm_id: 'from_session' });
    });

    it('fails when the call names none and the session is gone', () => {
      assert.deepEqual(callTarget(call({ version_id: undefined }), null), fail('Session ses_1 no longer exists.'));
    });
  });

  describe('route', () => {
    const target = { version_id: 'ver_1', llm_id: 'main' };

    it('fails when the version or its llm option is gone', () => {
      assert.deepEqual(route(target, null), fail('Agent version ver_1 no longer exists.'));
      assert.deepEqual(route(target, version([option('anthropic', 'other')])), fail('LLM option main is not in version ver_1.'));
    });

    it("answers a scripted option from its script, reading the message's output only when the script quotes tool results", () => {
      const plain = { turns: [{ text: 'hi' }] };
      const quoting = { turns: [{ text: 'it is {{weather.summary}}' }] };
      assert.deepEqual(route(target, version([option('scripted')], { main: plain })), { kind: 'scripted', script: plain, needs_output: false });
      assert.deepEqual(route(target, version([option('scripted')], { main: quoting })), { kind: 'scripted', script: quoting, needs_output: true });
      assert.deepEqual(route(target, version([option('scripted')])), { kind: 'scripted', script: undefined, needs_output: false });
    });

    it('sends every other provider to a live call with the option and version', () => {
      const v = version([option('scripted', 'alt'), option('openai')]);
      assert.deepEqual(route(target, v), { kind: 'live', option: option('openai'), version: v });
    });
  });

  describe('liveCall', () => {
    it('fails when the session or the message is gone', () => {
      assert.deepEqual(liveCall(call(), option('anthropic'), null, message('running')), fail('Session ses_1 no longer exists.'));
      assert.deepEqual(liveCall(call(), option('anthropic'), session, null), fail('Message msg_1 no longer exists.'));
    });

    it('makes no call for a message that ended before it started (cancelled before the actor listened)', () => {
      for (const status of ['completed', 'failed', 'cancelled'] as const) assert.deepEqual(liveCall(call(), option('openai'), session, message(status)), { kind: 'fail', result: CANCELLED });
    });

    it("picks the provider's native adapter or the org's router", () => {
      const m = message('running');
      for (const p of ['openai', 'openai-responses', 'anthropic'] as const) assert.equal(liveCall(call(), option(p), session, m).kind, 'provider');
      assert.deepEqual(liveCall(call(), option('routing'), session, message('requires_action')), { kind: 'router', session, message: message('requires_action') });
    });

    it('fails an unknown provider clearly', () => {
      assert.deepEqual(liveCall(call(), option('palm' as LlmOption['provider']), session, message('running')), fail('Provider palm is not supported.'));
    });
  });

  describe('answer', () => {
    const result: ModelResult = { ok: true, parts: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', usage: null };

    it('tells the session model.responded with a deterministic command id, at the call’s priority', () => {
      const out = answer(call({ priority: 'batch' }), result);
      const command = { kind: 'model.responded', command_id: 'resp-msg_1-1-2', message_id: 'msg_1', attempt: 1, call_index: 2, result };
      assert.deepEqual(out.sends, [{ to: SESSION, key: 'ses_1', name: 'model.responded', data: { session_id: 'ses_1', command }, job_id: sessionJobId('ses_1', command.command_id), priority: 'batch' }]);
      assert.deepEqual(answer(call({ priority: 'batch' }), result), out, 'a redelivered call answers the same');
    });

    it('passes a failure on for the session to retry or fail the message', () => {
      const failure: ModelResult = { ok: false, error: 'HTTP 529', retryable: true, retry_after_ms: 1000 };
      const data = answer(call(), failure).sends![0].data as { command: { result: ModelResult } };
      assert.deepEqual(data.command.result, failure);
    });

    it("answers a code agent's call with an agent.call_done under the id the sweeper looks for, naming the try, and keeps a retryable failure's retry fields", () => {
      for (const tries of [undefined, 2]) {
        const c = call({ position: 4, request: { input: 'x' }, ...(tries ? { call_attempt: tries } : {}) });
        const failure: ModelResult = { ok: false, error: 'HTTP 503', retryable: true, retry_after_ms: 2000 };
        const sent = answer(c, failure).sends![0];
        const command = (sent.data as { command: { kind: string; command_id: string; call_attempt?: number; result: unknown } }).command;
        assert.equal(command.kind, 'agent.call_done');
        assert.equal(command.command_id, modelAnswerCommandId(c), 'the stranded-work sweeper checks this answer, not a model.responded');
        assert.equal(sent.job_id, sessionJobId('ses_1', modelAnswerCommandId(c)));
        assert.equal(command.call_attempt, tries);
        assert.deepEqual(command.result, { ok: false, error: 'HTTP 503', retryable: true, retry_after_ms: 2000 });
      }
      assert.notEqual(modelAnswerCommandId(call({ position: 4 })), modelAnswerCommandId(call({ position: 4, call_attempt: 2 })), 'each try is answered under its own id');
    });

    it('says nothing when the message ended while the call ran', () => {
      assert.deepEqual(answer(call(), CANCELLED, true), {});
    });
  });
});
