import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { ToolDef } from '../../src/domain/agent.js';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { candidate } from '../fakes/llm-conversation.js';
import { agentWith } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';
import { json, until } from '../support/wait.js';

const text = (t: string) => [{ type: 'text', text: t }];
const lookupTool: ToolDef = {
  name: 'lookup',
  kind: 'external',
  path: 'tools/lookup.json',
  timeout_seconds: 30,
  description: 'Look a thing up.',
  input_schema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
  output_schema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] },
};

/** The value of one sample line, e.g. `troupe_sse_clients{role="all"} 1`, or null when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | null {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{') && !line.startsWith(name + ' ')) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return null;
}

describe('metrics on every role', function () {
  this.timeout(60_000);
  let h: Harness;
  let fake: FakeLlmUpstream;
  const metrics = async (url: string) => (await fetch(`${url}/metrics`)).text();

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ env: { TROUPE_SESSION_SHARDS: '4' } });
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });

  it('measures turns, ledger appends, tool calls, model calls, SSE clients and queues', async () => {
    const { agentId } = await agentWith(h, {
      tools: [lookupTool],
      llm_options: [{ id: 'main', provider: 'openai', model: 'gpt-metrics', base_url: fake.openaiBase }],
    });
    fake.reply = (body) => (JSON.stringify(body).includes('sunny') ? { text: 'It is sunny.' } : { text: '', toolCalls: [{ id: 'call_1', name: 'lookup', arguments: { q: 'weather' } }] });
    const sid = (await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { llm_api_key: 'sk-fake' } }), 201)).id;
    const stream = await h.api(`/v1/sessions/${sid}/stream`);
    assert.equal(stream.status, 200);
    await until(async () => sample(await metrics(h.baseUrl), 'troupe_sse_clients') === 1, 5000);

    await json(await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: text('weather?') } }), 201);
    const pending = await until(async () => (await json<{ tool_calls: { tool_call_id: string; message_id: string }[] }>(await h.api(`/v1/sessions/${sid}/tool-calls?status=pending`), 200)).tool_calls[0]);
    await json(await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'tool.result_submitted', message_id: pending.message_id, tool_call_id: pending.tool_call_id, result: { answer: 'sunny' } } }), 201);
    await until(async () => (await json<{ status: string }>(await h.api(`/v1/sessions/${sid}/messages/${pending.message_id}`), 200)).status === 'completed');

    const m = await metrics(h.baseUrl);
    assert.ok(sample(m, 'troupe_actor_turn_duration_seconds_count', { actor: 'session', result: 'done' })! >= 3, 'session turns');
    assert.ok(sample(m, 'troupe_actor_turn_duration_seconds_count', { actor: 'router-proxy' })! >= 2, 'model-call turns');
    assert.ok(sample(m, 'troupe_actor_queue_wait_seconds_count', { actor: 'session' })! >= 3);
    assert.equal(sample(m, 'troupe_ledger_events_appended_total', { type: 'user.message' }), 1);
    assert.equal(sample(m, 'troupe_ledger_events_appended_total', { type: 'assistant.message_completed' }), 2);
    assert.equal(sample(m, 'troupe_tool_calls_total', { outcome: 'requested' }), 1);
    assert.equal(sample(m, 'troupe_tool_calls_total', { outcome: 'submitted' }), 1);
    assert.equal(sample(m, 'troupe_model_call_duration_seconds_count', { provider: 'openai', model: 'gpt-metrics', outcome: 'ok' }), 2);
    assert.ok(sample(m, 'troupe_model_tokens_total', { provider: 'openai', model: 'gpt-metrics', direction: 'input' })! > 0);
    assert.notEqual(sample(m, 'troupe_queue_jobs', { queue: 'session', state: 'waiting' }), null, 'queue depth of the session shards');
    assert.notEqual(sample(m, 'troupe_queue_oldest_waiting_seconds', { queue: 'router-proxy' }), null);
    await stream.body!.cancel();
    await until(async () => sample(await metrics(h.baseUrl), 'troupe_sse_clients') === 0, 5000);
  });

  it('the router serves /metrics with selections, fallbacks and model errors', async () => {
    fake.reset();
    assert.equal((await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-fake-upstream' } })).status, 200);
    const candidates = [candidate(fake, 'openai', 'openai/first'), candidate(fake, 'openai', 'openai/second')];
    assert.equal((await h.api('/v1/routers/mx', { method: 'PUT', json: { candidates } })).status, 200);
    fake.failNext(503);
    const res = await fetch(`${h.routerUrl}/mx/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${h.routingKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'service/routing', messages: [{ role: 'user', content: 'Hi' }] }) });
    assert.equal(res.status, 200, await res.text());
    const m = await metrics(h.routerUrl);
    assert.equal(sample(m, 'troupe_router_fallbacks_total', { model: 'openai/first' }), 1);
    assert.equal(sample(m, 'troupe_router_selections_total', { model: 'openai/second', reason: 'fallback' }), 1);
    assert.equal(sample(m, 'troupe_model_call_errors_total', { model: 'up-openai-first', kind: '503' }), 1);
    assert.ok(sample(m, 'troupe_http_requests_total', { route: '/{router_id}/chat/completions', status: '200' })! >= 1);
  });

  describe('worker and webhooks processes', () => {
    const procs: RoleProcess[] = [];
    after(async () => {
      for (const p of procs) p.kill('SIGKILL');
      await Promise.all(procs.map((p) => p.exited));
    });

    it('serve /metrics and /healthz on METRICS_PORT', async () => {
      for (const [role, queue] of [['worker', 'session'], ['webhooks', 'webhooks']]) {
        const p = await startRoleProcess([role], { ...h.env, METRICS_PORT: '0' });
        procs.push(p);
        const port = (await p.waitForLog('metrics listening')).port as number;
        const base = `http://127.0.0.1:${port}`;
        const health = await json<{ status: string; roles: string[] }>(await fetch(`${base}/healthz`), 200);
        const { sandboxCapabilities } = await import('../../src/lib/sandbox/capabilities.js');
        assert.deepEqual(health, { status: 'ok', roles: [role], ...(role === 'worker' ? { sandbox: sandboxCapabilities() } : {}) });
        const m = await metrics(base);
        assert.match(m, new RegExp(`troupe_queue_jobs\\{[^}]*queue="${queue}"`), `${role} reports its queues`);
        assert.match(m, new RegExp(`role="${role}"`));
        assert.equal((await fetch(`${base}/v1/sessions`)).status, 404);
      }
    });
  });
});

describe('metrics exposure in production (customer audit 2, item 8)', function () {
  this.timeout(60_000);
  const production = { NODE_ENV: 'production', HOST: '127.0.0.1', TROUPE_MASTER_KEY: `k1:${randomBytes(32).toString('base64')}` };
  const scrape = (url: string, token?: string) => fetch(`${url}/metrics`, token === undefined ? {} : { headers: { Authorization: `Bearer ${token}` } });

  it('serves no /metrics on the public web and router ports without METRICS_TOKEN or METRICS_PUBLIC', async () => {
    const h = await startHarness({ roles: ['web', 'router'], env: production });
    try {
      for (const url of [h.baseUrl, h.routerUrl]) {
        const res = await scrape(url);
        assert.equal(res.status, 404, url);
        assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'route_not_found');
      }
      assert.equal((await fetch(`${h.baseUrl}/healthz`)).status, 200, 'the probes stay public');
    } finally {
      await h.close();
    }
  });

  it('asks for the bearer METRICS_TOKEN on every port, the worker’s METRICS_PORT too', async () => {
    const token = randomBytes(24).toString('hex');
    const h = await startHarness({ roles: ['web', 'router'], env: { ...production, METRICS_TOKEN: token } });
    const worker = await startHarness({ roles: ['worker'], env: { ...production, METRICS_TOKEN: token, METRICS_PORT: '0' } });
    try {
      const urls = [h.baseUrl, h.routerUrl, `http://127.0.0.1:${worker.running.ports.metrics}`];
      for (const url of urls) {
        for (const wrong of [undefined, 'not-the-token', `${token}x`]) {
          const res = await scrape(url, wrong);
          assert.equal(res.status, 401, `${url} ${wrong}`);
          assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'invalid_metrics_token');
        }
        const ok = await scrape(url, token);
        assert.equal(ok.status, 200, url);
        assert.match(await ok.text(), /^troupe_/m);
      }
    } finally {
      await worker.close();
      await h.close();
    }
  });

  it('serves it openly with METRICS_PUBLIC=1, as outside production', async () => {
    const h = await startHarness({ roles: ['web', 'router'], env: { ...production, METRICS_PUBLIC: '1' } });
    try {
      for (const url of [h.baseUrl, h.routerUrl]) assert.equal((await scrape(url)).status, 200, url);
    } finally {
      await h.close();
    }
  });
});
