import assert from 'node:assert/strict';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { FakeMcpServer } from '../fakes/mcp-server.js';
import { WebhookReceiver } from '../fakes/webhook-receiver.js';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyWebhook } from '../../src/lib/webhooks/verify.js';
import { createAgentFrom, entriesOfDir, type TarEntry } from '../support/archives.js';
import { codeAgentFiles, codeAgentManifest, pythonCodeAgent } from '../support/code-agent.js';
import { startHarness, type Harness } from '../support/harness.js';
import { troupe } from '../support/troupe-cli.js';
import { json, until } from '../support/wait.js';
import type { LedgerEvent } from '../support/wire.js';

type Ev = LedgerEvent;

/** Code agents (troupe-js@1) end to end: published from an archive, their run function stepped in the sandbox, journaled in the ledger. */
describe('code agents (JavaScript)', function () {
  this.timeout(60_000);
  let h: Harness;
  let fake: FakeLlmUpstream;
  let agentId: string;
  let pyAgentId: string;

  before(async () => {
    fake = await FakeLlmUpstream.start();
    // Private webhook URLs allowed: the item-5 test's receiver listens on 127.0.0.1.
    h = await startHarness({ env: { TROUPE_WEBHOOKS_ALLOW_PRIVATE: '1' } });
    const res = await createAgentFrom(h, codeAgentManifest(fake.openaiBase), codeAgentFiles(codeAgentManifest(fake.openaiBase)), 'code-agent');
    const body = await res.text();
    assert.equal(res.status, 201, body);
    agentId = (JSON.parse(body) as { id: string }).id;
    const py = pythonCodeAgent(fake.openaiBase);
    const pyRes = await createAgentFrom(h, py.manifest, py.files, 'code-agent-py');
    const pyBody = await pyRes.text();
    assert.equal(pyRes.status, 201, pyBody);
    pyAgentId = (JSON.parse(pyBody) as { id: string }).id;
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });

  async function send(text: string, extra: Record<string, unknown> = {}, agent = agentId): Promise<{ sid: string; mid: string }> {
    const res = await h.api(`/v1/agents/${agent}/sessions`, { method: 'POST', json: { llm_api_key: 'sk-fake' } });
    const sid = ((await res.json()) as { id: string }).id;
    const sent = await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text }], ...extra } });
    const body = await sent.text();
    assert.equal(sent.status, 201, body);
    return { sid, mid: (JSON.parse(body) as { message: { id: string } }).message.id };
  }

  async function events(sid: string): Promise<Ev[]> {
    return ((await (await h.api(`/v1/sessions/${sid}/events?limit=100`)).json()) as { events: Ev[] }).events;
  }

  async function settled(sid: string, statuses = ['completed', 'failed', 'cancelled'], ms = 25_000): Promise<Ev[]> {
    return until(async () => {
      const all = await events(sid);
      return all.some((e) => e.type === 'message.status_changed' && statuses.includes(String(e.data.to))) ? all : undefined;
    }, ms);
  }

  function final(all: Ev[]): Ev {
    return all.filter((e) => e.type === 'message.status_changed').pop()!;
  }

  it('publishes an entrypoint with a run function as a code agent', async () => {
    const org = (await h.running.core.stores.orgs.byName('default'))!;
    const version = await h.running.core.stores.agents.activeVersion(org._id, agentId);
    assert.equal(version?.agent_config?.code, true);
    assert.equal(version?.agent_config?.instructions, 'You are a code agent.');
  });

  it('runs a custom and an external tool in parallel, suspends, resumes on the result, and replays without calling anything twice', async () => {
    fake.reply = { text: 'Model says hi' };
    const before = fake.requests.length;
    const { sid, mid } = await send('parallel Oslo');
    const waiting = await settled(sid, ['requires_action']);
    const started = waiting.filter((e) => e.type === 'agent.call_started');
    assert.deepEqual(started.map((e) => [e.data.position, e.data.kind, e.data.name]), [[0, 'tool', 'add'], [1, 'tool', 'lookup']], 'both calls of Promise.all were started in one step');
    const requested = waiting.find((e) => e.type === 'tool.call_requested')!;
    assert.equal(requested.data.tool_call_id, 'ctx_1');
    assert.deepEqual(requested.data.arguments, { city: 'Oslo' });
    // The custom tool completes while the external one waits; then nothing of the agent runs: no process holds it.
    await until(async () => (await events(sid)).some((e) => e.type === 'tool.call_completed'));
    const org = (await h.running.core.stores.orgs.byName('default'))!;
    const versionId = (await h.running.core.stores.agents.activeVersion(org._id, agentId))!._id;
    const held = execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' }).split('\n').filter((l) => l.includes(versionId));
    assert.deepEqual(held, [], 'no sandbox process of the agent while it waits on the external tool');
    const submit = await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'tool.result_submitted', message_id: mid, tool_call_id: 'ctx_1', result: { summary: 'sunny' } } });
    assert.equal(submit.status, 201, await submit.text());
    const all = await settled(sid);
    assert.equal(final(all).data.to, 'completed', JSON.stringify(final(all)));
    const answer = all.find((e) => e.type === 'assistant.message_completed')!;
    assert.deepEqual(answer.data.parts, [{ type: 'text', text: 'Model says hi / 5 / sunny' }]);
    assert.equal(fake.requests.length - before, 1, 'the model was called once, though the run was replayed three times');
    const sent = fake.requests[fake.requests.length - 1].body as { messages: { role: string; content: unknown }[] };
    assert.ok(JSON.stringify(sent.messages).includes('sum 5 in sunny'), JSON.stringify(sent.messages));
    assert.equal(all.filter((e) => e.type === 'tool.call_completed').length, 1, 'the custom tool ran once');
    assert.deepEqual(all.filter((e) => e.type === 'agent.progress').map((e) => e.data.text), ['tools done'], 'an emit is journaled once, not repeated by replays');
    const modelDone = all.find((e) => e.type === 'agent.call_completed')!;
    assert.equal(modelDone.data.kind, 'model');
    assert.equal((modelDone.data.output as { text: string }).text, 'Model says hi');
    const message = (await (await h.api(`/v1/sessions/${sid}/messages/${mid}`)).json()) as { status: string; output: { parts: { type: string }[] } };
    assert.equal(message.status, 'completed');
    assert.deepEqual(message.output.parts.map((p) => p.type), ['tool_call', 'tool_call', 'tool_result', 'tool_result', 'text']);
  });

  it('fails the message with nondeterministic_replay, naming both calls, when a replay makes a different call', async () => {
    const { sid } = await send('diverge');
    const all = await settled(sid);
    const end = final(all);
    assert.equal(end.data.to, 'failed');
    const error = String(end.data.error);
    assert.match(error, /^nondeterministic_replay: at position 0 the run called tool add\(\{"a":[0-9.e-]+,"b":1\}\), but the journal has tool add\(\{"a":[0-9.e-]+,"b":1\}\)\.$/, error);
    assert.equal(all.filter((e) => e.type === 'tool.call_completed').length, 1, 'the tool ran once; the divergent call was not run');
  });

  it('sleeps durably, calls a named llm option, reads its message, and emits once', async () => {
    const { sid } = await send('chain', { metadata: { k: 'v1' } });
    const all = await settled(sid);
    assert.equal(final(all).data.to, 'completed', JSON.stringify(final(all)));
    const sleep = all.find((e) => e.type === 'agent.call_started' && e.data.kind === 'sleep')!;
    assert.deepEqual(sleep.data.arguments, { ms: 150 });
    assert.ok(sleep.data.until, 'the sleep records when it ends');
    const model = all.find((e) => e.type === 'agent.call_started' && e.data.kind === 'model')!;
    assert.equal(model.data.name, 'script');
    assert.deepEqual(all.find((e) => e.type === 'assistant.message_completed')!.data.parts, [{ type: 'text', text: 'scripted hello|v1|0' }]);
    assert.deepEqual(all.filter((e) => e.type === 'agent.progress').map((e) => [e.data.position, e.data.text]), [[0, 'starting']]);
  });

  it('hands a failed call to the run as an exception it can catch, and fails the message when the run throws', async () => {
    const caught = await settled((await send('catch')).sid);
    assert.deepEqual(caught.find((e) => e.type === 'assistant.message_completed')!.data.parts, [{ type: 'text', text: 'caught: The agent has no tool named missing_tool.' }]);
    const thrown = final(await settled((await send('throws now')).sid));
    assert.equal(thrown.data.to, 'failed');
    assert.equal(thrown.data.error, 'TypeError: bad input now');
  });

  it('runs agent code under the sandbox rules of tools: no host files, no network', async () => {
    const all = await settled((await send('probe')).sid);
    const text = (all.find((e) => e.type === 'assistant.message_completed')!.data.parts as { text: string }[])[0].text;
    const probe = JSON.parse(text) as { fs: string; net: string };
    assert.match(probe.fs, /^refused /, text);
    assert.match(probe.net, /^refused /, text);
  });

  it('cancels a code agent waiting in a sleep: its message ends cancelled and the sleep does not wake it', async () => {
    const { sid, mid } = await send('wait');
    await until(async () => (await events(sid)).some((e) => e.type === 'agent.call_started'));
    const res = await h.api(`/v1/sessions/${sid}/messages/${mid}/cancel`, { method: 'POST' });
    assert.equal(res.status, 200, await res.text());
    const all = await settled(sid);
    assert.equal(final(all).data.to, 'cancelled');
    assert.ok(!all.some((e) => e.type === 'assistant.message_completed'));
  });

  describe('in Python (troupe-py@1)', () => {
    it('runs tools in parallel, suspends on the external one, replays, and answers', async () => {
      const { sid, mid } = await send('parallel', {}, pyAgentId);
      await settled(sid, ['requires_action']);
      const submit = await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'tool.result_submitted', message_id: mid, tool_call_id: 'ctx_1', result: { summary: 'rain' } } });
      assert.equal(submit.status, 201, await submit.text());
      const all = await settled(sid);
      assert.equal(final(all).data.to, 'completed', JSON.stringify(final(all)));
      assert.deepEqual(all.filter((e) => e.type === 'agent.call_started').map((e) => [e.data.position, e.data.kind, e.data.name]), [[0, 'tool', 'add'], [1, 'tool', 'lookup'], [3, 'model', 'script']]);
      assert.deepEqual(all.find((e) => e.type === 'assistant.message_completed')!.data.parts, [{ type: 'text', text: 'scripted hello / 5 / rain' }]);
      assert.deepEqual(all.filter((e) => e.type === 'agent.progress').map((e) => e.data.text), ['tools done']);
    });

    it('fails a divergent replay with nondeterministic_replay', async () => {
      const end = final(await settled((await send('diverge', {}, pyAgentId)).sid));
      assert.equal(end.data.to, 'failed');
      assert.match(String(end.data.error), /^nondeterministic_replay: at position 0 the run called tool add\(\{"a":[0-9.e-]+,"b":1\}\), but the journal has tool add\(/);
    });

    it('runs under the sandbox rules: no host files, no network', async () => {
      const all = await settled((await send('probe', {}, pyAgentId)).sid);
      const text = (all.find((e) => e.type === 'assistant.message_completed')!.data.parts as { text: string }[])[0].text;
      const probe = JSON.parse(text) as { fs: string; net: string };
      assert.match(probe.fs, /^refused /, text);
      assert.match(probe.net, /^refused /, text);
    });

    it('refuses a Python run function published under sdk troupe-js@1', async () => {
      const py = pythonCodeAgent(fake.openaiBase);
      const manifest = { ...py.manifest, sdk: 'troupe-js@1' };
      const res = await createAgentFrom(h, manifest, py.files.map((f) => (f.name === 'troupe.json' ? { name: 'troupe.json', content: JSON.stringify(manifest) } : f)), 'wrong-sdk');
      assert.equal(res.status, 400);
      const body = (await res.json()) as { error: { code: string; param: string } };
      assert.equal(body.error.code, 'invalid_entrypoint');
      assert.equal(body.error.param, 'manifest.sdk');
    });
  });

  describe('with agent control (issue 33)', () => {
    let mcp: FakeMcpServer;
    let controlId: string;
    let pyControlId: string;

    /** The test agent plus an always_ask custom tool and an always_allow MCP server. */
    function control(manifest: Record<string, unknown>): Record<string, unknown> {
      return {
        ...manifest,
        name: `${String(manifest.name)}-control`,
        custom_tools: [...(manifest.custom_tools as unknown[]), { name: 'guarded', path: 'tools/add.js', permission: 'always_ask', timeout_seconds: 60 }],
        mcp_servers: [{ name: 'fake', url: mcp.url, permission: 'always_allow', allowed_tools: ['add'] }],
      };
    }

    async function publish(manifest: Record<string, unknown>, files: TarEntry[]): Promise<string> {
      const withManifest = files.map((f) => (f.name === 'troupe.json' ? { name: 'troupe.json', content: JSON.stringify(manifest) } : f));
      const res = await createAgentFrom(h, manifest, withManifest, String(manifest.name));
      const body = await res.text();
      assert.equal(res.status, 201, body);
      return (JSON.parse(body) as { id: string }).id;
    }

    before(async () => {
      mcp = await FakeMcpServer.start();
      const js = control(codeAgentManifest(fake.openaiBase));
      controlId = await publish(js, codeAgentFiles(js));
      const py = pythonCodeAgent(fake.openaiBase);
      pyControlId = await publish(control(py.manifest), py.files);
    });
    after(async () => {
      await mcp?.close();
    });

    async function confirm(sid: string, mid: string, toolCallId: string, result: 'allow' | 'deny', extra: Record<string, unknown> = {}): Promise<void> {
      const res = await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.tool_confirmation', message_id: mid, tool_call_id: toolCallId, result, ...extra } });
      assert.equal(res.status, 201, await res.text());
    }

    it('asks before an always_ask ctx.tool, holding no process; allow runs it and deny rejects ctx.tool with the deny message', async () => {
      const allowed = await send('ask', {}, controlId);
      const asked = (await settled(allowed.sid, ['requires_action'])).find((e) => e.type === 'tool.confirmation_requested')!;
      assert.ok(asked, 'tool.confirmation_requested recorded');
      assert.equal(asked.data.tool_name, 'guarded');
      assert.equal(asked.data.tool_call_id, 'ctx_0');
      assert.deepEqual(asked.data.arguments, { a: 1, b: 2 });
      const org = (await h.running.core.stores.orgs.byName('default'))!;
      const versionId = (await h.running.core.stores.agents.activeVersion(org._id, controlId))!._id;
      const held = execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' }).split('\n').filter((l) => l.includes(versionId));
      assert.deepEqual(held, [], 'no sandbox process of the agent while it waits for the confirmation');
      assert.ok(!(await events(allowed.sid)).some((e) => e.type === 'tool.call_completed'), 'the tool did not run before it was allowed');
      await confirm(allowed.sid, allowed.mid, 'ctx_0', 'allow');
      const done = await settled(allowed.sid);
      assert.equal(final(done).data.to, 'completed', JSON.stringify(final(done)));
      assert.deepEqual(done.find((e) => e.type === 'assistant.message_completed')!.data.parts, [{ type: 'text', text: 'ran {"sum":3}' }]);

      for (const agent of [controlId, pyControlId]) {
        const denied = await send('ask', {}, agent);
        const waiting = final(await settled(denied.sid, ['requires_action', 'completed', 'failed']));
        assert.equal(waiting.data.to, 'requires_action', JSON.stringify(waiting));
        await confirm(denied.sid, denied.mid, 'ctx_0', 'deny', { deny_message: 'Not today.' });
        const all = await settled(denied.sid);
        assert.equal(final(all).data.to, 'completed', JSON.stringify(final(all)));
        const expected = agent === controlId ? 'denied: Not today.' : 'denied: CallFailed: Not today.';
        assert.deepEqual(all.find((e) => e.type === 'assistant.message_completed')!.data.parts, [{ type: 'text', text: expected }], agent);
        assert.ok(!all.some((e) => e.type === 'tool.call_completed'), 'a denied tool never runs');
      }
    });

    /** Sends `text` to an existing session; its message id. */
    async function post(sid: string, text: string, extra: Record<string, unknown> = {}): Promise<string> {
      const sent = await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text }], ...extra } });
      const body = await sent.text();
      assert.equal(sent.status, 201, body);
      return (JSON.parse(body) as { message: { id: string } }).message.id;
    }

    /** The events once message `mid` ended, and its last status change. */
    async function ended(sid: string, mid: string): Promise<{ all: Ev[]; end: Ev }> {
      return until(async () => {
        const all = await events(sid);
        const end = all.filter((e) => e.type === 'message.status_changed' && e.message_id === mid).pop();
        return end && ['completed', 'failed', 'cancelled'].includes(String(end.data.to)) ? { all, end } : undefined;
      }, 25_000);
    }

    function answerOf(all: Ev[], mid: string): string {
      return (all.find((e) => e.type === 'assistant.message_completed' && e.message_id === mid)!.data.parts as { text: string }[])[0].text;
    }

    it('sends ctx.transcript() to a message\'s first step, and to later ones only once its run called it: a later step that calls it first stops and runs again with it', async () => {
      const core = h.running.core;
      const asked = (id: string) => core.redis.exists(core.keys.agentTranscript(id));
      for (const agent of [controlId, pyControlId]) {
        const { sid, mid } = await send('hello', {}, agent);
        assert.equal((await ended(sid, mid)).end.data.to, 'completed');
        assert.equal(await asked(mid), 0, 'a run that never calls ctx.transcript() never asks for it');
        const late = await post(sid, 'late-history');
        const { all, end } = await ended(sid, late);
        assert.equal(end.data.to, 'completed', JSON.stringify(end));
        assert.deepEqual(JSON.parse(answerOf(all, late)), { sum: 2, transcript: [{ role: 'user', text: 'hello' }, { role: 'assistant', text: 'echo hello' }] }, agent);
        assert.equal(await asked(late), 1, 'its later steps are sent it');
        // The run that asked was dropped whole: the journal holds its one tool call, once.
        assert.deepEqual(all.filter((e) => e.type === 'agent.call_started' && e.message_id === late).map((e) => e.data.position), [0]);
        // A first step that calls it says so.
        const early = await post(sid, 'history');
        assert.equal((await ended(sid, early)).end.data.to, 'completed');
        assert.equal(await asked(early), 1, 'a first step that called it');
      }
    });

    it('on_busy interrupt cancels a sleeping code agent and starts the new message at once; its turn stays in ctx.transcript()', async () => {
      const { sid, mid } = await send('wait', {}, controlId);
      await until(async () => (await events(sid)).some((e) => e.type === 'agent.call_started' && e.data.kind === 'sleep'));
      const next = await post(sid, 'history', { on_busy: 'interrupt' });
      const first = await ended(sid, mid);
      assert.equal(first.end.data.to, 'cancelled');
      assert.equal(first.end.data.interrupted_by, next);
      const { all, end } = await ended(sid, next);
      assert.equal(end.data.to, 'completed', JSON.stringify(end));
      assert.deepEqual(JSON.parse(answerOf(all, next)), [{ role: 'user', text: 'wait' }]);
    });

    it('on_busy rollback aborts a code agent waiting on its model call and leaves that turn out of ctx.transcript() from then on', async () => {
      const { sid, mid } = await send('hello', {}, controlId);
      assert.equal((await ended(sid, mid)).end.data.to, 'completed');
      fake.delayMs = 20_000;
      const closed = fake.closedEarly;
      try {
        const slow = await post(sid, 'slow');
        await until(async () => (await events(sid)).some((e) => e.type === 'agent.call_started' && e.data.kind === 'model' && e.message_id === slow));
        const next = await post(sid, 'history', { on_busy: 'rollback' });
        const stopped = await ended(sid, slow);
        assert.equal(stopped.end.data.to, 'cancelled');
        assert.equal(stopped.end.data.on_busy, 'rollback');
        const { all, end } = await ended(sid, next);
        assert.equal(end.data.to, 'completed', JSON.stringify(end));
        assert.deepEqual(JSON.parse(answerOf(all, next)), [{ role: 'user', text: 'hello' }, { role: 'assistant', text: 'echo hello' }]);
        await until(async () => fake.closedEarly > closed || undefined, 10_000);
        // From then on too: a later turn's transcript still leaves the rolled-back one out.
        const later = await post(sid, 'history');
        const after = await ended(sid, later);
        assert.deepEqual(JSON.parse(answerOf(after.all, later)).map((t: { text: string }) => t.text), ['hello', 'echo hello', 'history', answerOf(all, next)]);
      } finally {
        fake.delayMs = 0;
      }
    });

    it('retries a retryable model failure (503) with the built-in loop\'s backoff, and hands a non-retryable one (400) to the run at once', async () => {
      fake.reply = { text: 'after retry' };
      fake.failNext(503);
      let before = fake.requests.length;
      const retried = await settled((await send('retry', {}, controlId)).sid);
      assert.equal(answerOf(retried, retried.find((e) => e.type === 'user.message')!.message_id!), 'model: after retry');
      assert.equal(fake.requests.length - before, 2, 'called twice: the failure, then the retry');
      const starts = retried.filter((e) => e.type === 'agent.call_started' && e.data.position === 0);
      assert.equal(starts.length, 2, 'the retry is recorded as the call started again');
      assert.equal(starts[1].data.attempt, 2);
      assert.equal(starts[1].data.retry_in_ms, 1000);
      assert.match(String(starts[1].data.error), /503/);
      assert.equal(retried.filter((e) => e.type === 'agent.call_completed').length, 1);

      fake.failNext(400);
      before = fake.requests.length;
      const failed = await settled((await send('retry', {}, controlId)).sid);
      const text = answerOf(failed, failed.find((e) => e.type === 'user.message')!.message_id!);
      assert.match(text, /^failed: .*400/, text);
      assert.equal(fake.requests.length - before, 1, 'a non-retryable failure is not retried');
    });

    it("calls an MCP tool through ctx.tool('mcp__<server>__<tool>')", async () => {
      const before = mcp.calls.length;
      const all = await settled((await send('mcp', {}, controlId)).sid);
      assert.equal(final(all).data.to, 'completed', JSON.stringify(final(all)));
      assert.deepEqual(mcp.calls.slice(before), [{ name: 'add', arguments: { a: 2, b: 5 } }]);
      const text = (all.find((e) => e.type === 'assistant.message_completed')!.data.parts as { text: string }[])[0].text;
      assert.match(text, /^mcp .*7/, text);
      assert.equal(all.find((e) => e.type === 'tool.call_completed')!.data.tool_name, 'mcp__fake__add');
    });
  });

  for (const example of ['triage-agent-js', 'triage-agent-py']) {
    it(`deploys examples/${example} and completes a message: route, parallel tools, a rule check and one retry`, async () => {
      const dir = join(__dirname, '../../../examples', example);
      const files = await entriesOfDir(dir);
      const manifest = JSON.parse(String(files.find((f) => f.name === 'troupe.json')!.content)) as Record<string, unknown>;
      const res = await createAgentFrom(h, manifest, files, example);
      const body = await res.text();
      assert.equal(res.status, 201, body);
      const { sid, mid } = await send('When does my plan renew?', {}, (JSON.parse(body) as { id: string }).id);
      const waiting = await settled(sid, ['requires_action']);
      const requested = waiting.find((e) => e.type === 'tool.call_requested')!;
      assert.deepEqual(requested.data.arguments, { area: 'billing' });
      const submit = await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'tool.result_submitted', message_id: mid, tool_call_id: requested.data.tool_call_id, result: { status: 'all systems normal' } } });
      assert.equal(submit.status, 201, await submit.text());
      const all = await settled(sid);
      assert.equal(final(all).data.to, 'completed', JSON.stringify(final(all)));
      assert.deepEqual(all.find((e) => e.type === 'assistant.message_completed')!.data.parts, [{ type: 'text', text: 'Answer: your Team plan renews on 2026-12-01; service status: all systems normal.' }]);
      assert.deepEqual(all.filter((e) => e.type === 'agent.progress').map((e) => e.data.text), ['routed to billing', 'the answer broke the format rule; retrying once']);
    });
  }

  it('runs a batch of code-agent sessions: counts, signed session.completed webhooks, model-call usage, and troupe tail prints agent.* readably', async () => {
    const rx = await WebhookReceiver.start();
    const dir = mkdtempSync(join(tmpdir(), 'troupe-ca-tail-'));
    const reply = fake.reply;
    try {
      // Batch items carry no llm_api_key: this agent's real llm option reads a stored credential.
      await json(await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-fake' } }), 200);
      const base = codeAgentManifest(fake.openaiBase);
      const manifest = { ...base, name: 'code-agent-batch', llm_options: (base.llm_options as Record<string, unknown>[]).map((o) => (o.id === 'main' ? { ...o, api_key_credential: 'FAKE_KEY' } : o)) };
      const res = await createAgentFrom(h, manifest, codeAgentFiles(manifest), 'code-agent-batch');
      const batchAgent = (await json<{ id: string }>(res, 201)).id;
      const hook = await json<{ signing_secret: string }>(await h.api(`/v1/agents/${batchAgent}/webhook`, { method: 'PUT', json: { webhook_url: `${rx.url}/hook`, event_types: ['session.completed', 'batch.completed'] } }), 200);
      // A real (not scripted) llm option: the fake upstream reports these tokens, which usage must show.
      fake.reply = { text: 'counted', inputTokens: 100, outputTokens: 40 };
      const items = [0, 1, 2].map((i) => ({ agent_id: batchAgent, message: { content: [{ type: 'text', text: 'retry' }] }, metadata: { row: String(i) } }));
      const created = await json<{ batch_id: string }>(await h.api('/v1/session-batches', { method: 'POST', json: { items } }), 201);
      const done = await until(async () => {
        const b = await json<{ status: string; counts: Record<string, number>; sessions: { session_id: string; last_message_status: string }[] }>(await h.api(`/v1/session-batches/${created.batch_id}`), 200);
        return b.status !== 'queued' && b.status !== 'running' && b;
      }, 20_000);
      assert.equal(done.status, 'completed', JSON.stringify(done));
      assert.deepEqual(done.counts, { queued: 0, running: 0, completed: 3, failed: 0 });
      const sids = done.sessions.map((s) => s.session_id);
      for (const sid of sids) {
        const all = await events(sid);
        assert.deepEqual(all.find((e) => e.type === 'assistant.message_completed')?.data.parts, [{ type: 'text', text: 'model: counted' }], sid);
        // Usage is counted after the turn ends (as for the built-in loop): read until the call shows.
        const usage = await until(async () => {
          const u = await json<{ models: Record<string, unknown>[] }>(await h.api(`/v1/sessions/${sid}/usage`), 200);
          return u.models.length > 0 && u;
        }, 5000);
        assert.deepEqual(usage.models, [{ model: 'gpt-test', model_calls: 1, input_tokens: 100, output_tokens: 40, cost: [], unpriced_model_calls: 1 }], sid);
      }

      const got = await rx.waitFor(4, '/hook');
      const bodies = got.map((r) => verifyWebhook({ secret: hook.signing_secret, headers: r.headers, rawBody: r.rawBody })).map((v, i) => ({ id: v.id, ...(JSON.parse(got[i].rawBody) as { type: string; data: Record<string, unknown> }) }));
      const completed = bodies.filter((b) => b.type === 'session.completed');
      assert.deepEqual(completed.map((b) => b.data.session_id).sort(), [...sids].sort(), 'one signed session.completed per session');
      for (const b of completed) assert.deepEqual([b.data.batch_id, b.data.agent_id, b.data.last_message_status], [created.batch_id, batchAgent, 'completed']);
      assert.deepEqual(completed.map((b) => (b.data.metadata as { row: string }).row).sort(), ['0', '1', '2'], 'each item\'s metadata rides on its webhook');
      assert.deepEqual(bodies.filter((b) => b.type === 'batch.completed').map((b) => b.data.batch_id), [created.batch_id]);

      const env = { TROUPE_BASE_URL: h.baseUrl, TROUPE_API_KEY: h.apiKey, TROUPE_CONFIG: join(dir, 'config.json') };
      const tailed = await troupe(['tail', sids[0], '--until-idle'], env, dir);
      assert.equal(tailed.code, 0, tailed.stderr);
      assert.match(tailed.stdout, /agent +#0 model default\(\{"input":"retry"\}\)/, tailed.stdout);
      assert.match(tailed.stdout, /agent +#0 model done: counted/, tailed.stdout);
      assert.match(tailed.stdout, /assistant +model: counted/, tailed.stdout);
      assert.doesNotMatch(tailed.stdout, /agent\.call_/, 'no raw event type names');
    } finally {
      fake.reply = reply;
      await rx.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
