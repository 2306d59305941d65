import assert from 'node:assert/strict';
import { answer, GAVE_UP, ownsSession, plan, toolResult } from '../../actors/tool-runner/decide.js';
import type { ToolRunJob } from '../../src/domain/actors/tool-runner.js';
import { SESSION, sessionJobId } from '../../src/domain/actors/session.js';
import type { AgentVersionDoc } from '../../src/store/agents.js';
import type { ToolDef } from '../../src/domain/agent.js';
import type { SessionDoc } from '../../src/domain/views/session.js';
import type { MessageState } from '../../src/domain/ledger.js';

const tool = (over: Partial<ToolDef> = {}): ToolDef => ({
  name: 'add',
  kind: 'custom',
  path: 'tools/add.js',
  timeout_seconds: 7,
  description: null,
  input_schema: { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] },
  output_schema: null,
  ...over,
});
const session = (over: Partial<SessionDoc> = {}) => ({ _id: 'ses_1', org_id: 'org_1', version_id: 'ver_1', internet_access: false, storage_binding_id: null, ...over }) as SessionDoc;
const version = (tools: ToolDef[] = [tool()], secrets?: string[]) => ({ _id: 'ver_1', tools, manifest: { sandbox: secrets ? { secrets } : undefined } }) as unknown as AgentVersionDoc;
/** The job's message, waiting on its call (attempt 2, call_1) unless told otherwise. */
const message = (over: Partial<MessageState> = {}): MessageState => ({ id: 'msg_1', session_id: 'ses_1', sequence_number: 3, parts: [], metadata: {}, status: 'requires_action', attempt: 2, model_calls: 1, pending_tool_calls: [{ id: 'call_1', name: 'add' }], output: { parts: [] }, error: null, created_at: '', completed_at: null, ...over });
const job = (over: Partial<ToolRunJob> = {}): ToolRunJob => ({ org_id: 'org_1', session_id: 'ses_1', message_id: 'msg_1', attempt: 2, tool_call_id: 'call_1', tool_name: 'add', arguments: { a: 1 }, ...over });

describe('tool-runner decisions', () => {
  describe('plan', () => {
    it("refuses a session that is gone or another org's, the same way (no existence leak)", () => {
      assert.equal(ownsSession(job(), null), false);
      assert.equal(ownsSession(job(), session({ org_id: 'org_2' })), false);
      assert.deepEqual(plan(job(), null, null, message()), { kind: 'fail', error: 'session ses_1 not found' });
      assert.deepEqual(plan(job(), session({ org_id: 'org_2' }), version(), message()), { kind: 'fail', error: 'session ses_1 not found' });
    });

    it('fails a missing version, an unknown tool and a tool that is not custom, as results for the model', () => {
      assert.deepEqual(plan(job(), session(), null, message()), { kind: 'fail', error: 'agent version ver_1 not found' });
      assert.deepEqual(plan(job({ tool_name: 'nope' }), session(), version(), message()), { kind: 'fail', error: 'the agent has no tool named "nope"' });
      assert.deepEqual(plan(job({ tool_name: 'ext' }), session(), version([tool({ name: 'ext', kind: 'external' })]), message()), { kind: 'fail', error: 'tool ext is not a custom tool' });
    });

    it('runs nothing for a call that no longer waits: its message ended or was cancelled, the call was answered, or the job is of an older attempt', () => {
      for (const status of ['cancelled', 'failed', 'completed'] as const) assert.deepEqual(plan(job(), session(), version(), message({ status })), { kind: 'stale' }, status);
      assert.deepEqual(plan(job(), session(), version(), message({ pending_tool_calls: [{ id: 'call_2', name: 'add' }] })), { kind: 'stale' });
      assert.deepEqual(plan(job(), session(), version(), message({ attempt: 3 })), { kind: 'stale' });
      assert.deepEqual(plan(job(), session(), version(), null), { kind: 'stale' }, 'the message is gone');
      assert.equal(plan(job(), session(), version(), message({ status: 'running' })).kind, 'run');
    });

    it("checks the arguments against the tool's input_schema before anything runs", () => {
      const p = plan(job({ arguments: { a: 'two' } }), session(), version(), message());
      assert.equal(p.kind, 'fail');
      assert.match(p.kind === 'fail' ? p.error : '', /^arguments do not match input_schema: arguments\/a must be number/);
      assert.equal(plan(job({ arguments: [] as unknown as Record<string, unknown> }), session(), version([tool({ input_schema: null })]), message()).kind, 'fail');
    });

    it("runs with the declared secrets only, the tool's timeout, the session's internet access and its storage", () => {
      const p = plan(job(), session({ internet_access: true, storage_binding_id: 'stb_1' }), version([tool()], ['API_KEY']), message());
      assert.equal(p.kind, 'run');
      if (p.kind !== 'run') return;
      assert.deepEqual([p.tool.name, p.secrets, p.timeout_ms, p.internet_access, p.mount_storage], ['add', ['API_KEY'], 7000, true, true]);
      const bare = plan(job(), session(), version(), message());
      assert.ok(bare.kind === 'run' && bare.secrets.length === 0 && !bare.mount_storage && !bare.internet_access);
    });

    it("carries the manifest's sandbox.allowed_domains to the run, and none when the manifest has none", () => {
      const listed = { _id: 'ver_1', tools: [tool()], manifest: { sandbox: { secrets: [], internet_access: true, allowed_domains: ['api.example.com', '*.example.org'] } } } as unknown as AgentVersionDoc;
      const p = plan(job(), session({ internet_access: true }), listed, message());
      assert.deepEqual(p.kind === 'run' ? p.allowed_domains : null, ['api.example.com', '*.example.org']);
      const open = plan(job(), session({ internet_access: true }), version(), message());
      assert.ok(open.kind === 'run' && !('allowed_domains' in open));
    });
  });

  describe('toolResult', () => {
    it("passes the sandbox's result on", () => {
      assert.deepEqual(toolResult({ ok: true, output: { sum: 2 } }, null), { ok: true, output: { sum: 2 } });
      assert.deepEqual(toolResult({ ok: false, error: 'boom' }, null), { ok: false, error: 'boom' });
    });

    it('fails a call whose files could not be saved, keeping the call’s own error first', () => {
      assert.deepEqual(toolResult({ ok: true, output: 1 }, 'storage full'), { ok: false, error: 'storage full' });
      assert.deepEqual(toolResult({ ok: false, error: 'boom' }, 'storage full'), { ok: false, error: 'boom; storage full' });
    });
  });

  describe('answer', () => {
    it('tells the session tool.completed with a deterministic command id, at the session’s priority', () => {
      const out = answer(job({ priority: 'batch' }), { ok: true, output: 3 });
      assert.equal(out.sends?.length, 1);
      const send = out.sends![0];
      const command = { kind: 'tool.completed', command_id: 'toolres-msg_1-2-call_1', message_id: 'msg_1', attempt: 2, tool_call_id: 'call_1', result: { ok: true, output: 3 } };
      assert.deepEqual(send, { to: SESSION, key: 'ses_1', name: 'tool.completed', data: { session_id: 'ses_1', command }, job_id: sessionJobId('ses_1', command.command_id), priority: 'batch' });
      assert.deepEqual(answer(job({ priority: 'batch' }), { ok: true, output: 3 }), out, 'a redelivered job answers the same');
    });

    it('says nothing for a cancelled message: the session already failed the call', () => {
      assert.deepEqual(answer(job(), { ok: false, error: 'killed' }, true), {});
    });

    it('gives the model an error result when the job exhausts its retries', () => {
      const out = answer(job(), GAVE_UP);
      assert.deepEqual((out.sends![0].data as { command: { result: unknown } }).command.result, { ok: false, error: 'The tool could not be run (internal error).' });
    });
  });
});
