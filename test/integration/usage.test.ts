import assert from 'node:assert/strict';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { candidate, converse } from '../fakes/llm-conversation.js';
import { agentWith } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { json, until } from '../support/wait.js';

interface Figures {
  model_calls: number;
  input_tokens: number;
  output_tokens: number;
  cost: { currency: string; amount: number }[];
  unpriced_model_calls: number;
}
type Row = Figures & { model?: string; agent_id?: string | null; session_id?: string | null };

const PROVIDERS = ['openai', 'openai-responses', 'anthropic'] as const;
const INGRESS = ['chat', 'responses', 'messages'] as const;

describe('usage and cost', function () {
  this.timeout(90_000);
  let h: Harness;
  let fake: FakeLlmUpstream;

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ env: { TROUPE_SESSION_SHARDS: '2' } });
    await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-fake' } });
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => {
    fake.reset();
    fake.reply = { text: 'counted', inputTokens: 100, outputTokens: 40 };
  });

  const orgUsage = async (query: string) => json<{ groups: Row[]; totals: Figures }>(await h.api(`/v1/usage?${query}`), 200);
  const rowOf = async (query: string, key: 'model' | 'agent_id' | 'session_id', value: string | null, calls: number) =>
    until(async () => {
      const row = (await orgUsage(query)).groups.find((g) => g[key] === value);
      return row && row.model_calls >= calls && row;
    });

  async function runSession(agentId: string, messages: number): Promise<string> {
    const sid = (await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { llm_api_key: 'sk-test' } }), 201)).id;
    for (let i = 0; i < messages; i++) {
      const m = await json<{ status: string }>(await h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', json: { parts: [{ type: 'text', text: `q${i}` }] } }), 200);
      assert.equal(m.status, 'completed');
    }
    return sid;
  }

  it('reports a session’s tokens, model calls and cost per model, priced from the manifest', async () => {
    const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'openai', model: 'priced-model', base_url: fake.openaiBase, input_price: 2, output_price: 10, currency: 'EUR' }] });
    const sid = await runSession(agentId, 2);
    const usage = await until(async () => {
      const u = await json<{ session_id: string; models: Row[]; totals: Figures }>(await h.api(`/v1/sessions/${sid}/usage`), 200);
      return u.totals.model_calls >= 2 && u;
    });
    assert.equal(usage.session_id, sid);
    const expected = { model: 'priced-model', model_calls: 2, input_tokens: 200, output_tokens: 80, cost: [{ currency: 'EUR', amount: (200 * 2 + 80 * 10) / 1e6 }], unpriced_model_calls: 0 };
    assert.deepEqual(usage.models, [expected]);
    const { model: _m, ...totals } = expected;
    assert.deepEqual(usage.totals, totals);

    const unpriced = await agentWith(h, { llm_options: [{ id: 'main', provider: 'anthropic', model: 'free-model', base_url: fake.anthropicBase }] });
    const sid2 = await runSession(unpriced.agentId, 1);
    const u2 = await until(async () => {
      const u = await json<{ models: Row[] }>(await h.api(`/v1/sessions/${sid2}/usage`), 200);
      return u.models.length > 0 && u;
    });
    assert.deepEqual(u2.models, [{ model: 'free-model', model_calls: 1, input_tokens: 100, output_tokens: 40, cost: [], unpriced_model_calls: 1 }]);

    // Grouped for the org: by agent and by session.
    const byAgent = await rowOf('group_by=agent', 'agent_id', agentId, 2);
    assert.deepEqual([byAgent.input_tokens, byAgent.output_tokens], [200, 80]);
    const bySession = await rowOf('group_by=session', 'session_id', sid2, 1);
    assert.equal(bySession.unpriced_model_calls, 1);
    await json(await h.api(`/v1/sessions/ses_unknown/usage`), 404);
  });

  it('counts streamed routing calls exactly like non-streamed ones, for every ingress and provider', async () => {
    for (const provider of PROVIDERS) {
      for (const stream of [false, true]) {
        const model = `${provider}-${stream ? 'streamed' : 'plain'}`;
        const routerId = `u-${model}`;
        assert.equal((await h.api(`/v1/routers/${routerId}`, { method: 'PUT', json: { candidates: [candidate(fake, provider, model, { input_price: 3, output_price: 15 })] } })).status, 200);
        for (const kind of INGRESS) await converse(kind, h.routerUrl, h.routingKey, routerId, stream);
      }
    }
    for (const provider of PROVIDERS) {
      const plain = await rowOf('group_by=model', 'model', `${provider}-plain`, INGRESS.length);
      const streamed = await rowOf('group_by=model', 'model', `${provider}-streamed`, INGRESS.length);
      const { model: _a, ...p } = plain;
      const { model: _b, ...s } = streamed;
      assert.deepEqual(s, p, `${provider}: streamed and non-streamed calls count the same`);
      assert.deepEqual([p.model_calls, p.input_tokens, p.output_tokens], [3, 300, 120], provider);
      assert.deepEqual(p.cost, [{ currency: 'USD', amount: (300 * 3 + 120 * 15) / 1e6 }]);
    }
    // Routing-interface traffic has no agent or session.
    const routing = await rowOf('group_by=agent', 'agent_id', null, 18);
    assert.ok(routing.model_calls >= 18);
  });

  it('bills agent turns through a router to the session, not to the routing interface', async () => {
    assert.equal((await h.api('/v1/routers/agents', { method: 'PUT', json: { candidates: [candidate(fake, 'openai', 'routed-model', { input_price: 1, output_price: 1, currency: 'GBP' })] } })).status, 200);
    const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'routing', router_id: 'agents' }] });
    const sid = await runSession(agentId, 1);
    const u = await until(async () => {
      const r = await json<{ models: Row[] }>(await h.api(`/v1/sessions/${sid}/usage`), 200);
      return r.models.length > 0 && r;
    });
    assert.deepEqual(u.models, [{ model: 'routed-model', model_calls: 1, input_tokens: 100, output_tokens: 40, cost: [{ currency: 'GBP', amount: 140 / 1e6 }], unpriced_model_calls: 0 }]);
    const byModel = await rowOf('group_by=model', 'model', 'routed-model', 1);
    assert.equal(byModel.model_calls, 1, 'counted once');
  });

  it('documents usage, organization and session deletion in the OpenAPI document', async () => {
    const doc = await json<{ paths: Record<string, Record<string, { parameters?: { name: string }[]; responses: Record<string, unknown> }>> }>(await h.api('/v1/openapi.json'), 200);
    assert.deepEqual((doc.paths['/v1/usage'].get.parameters ?? []).map((p) => p.name).sort(), ['from', 'group_by', 'to']);
    assert.ok(doc.paths['/v1/sessions/{session_id}/usage'].get.responses['200']);
    assert.ok(doc.paths['/v1/organization'].patch);
    assert.ok(doc.paths['/v1/sessions/{session_id}'].delete.responses['204']);
  });

  it('filters by time and refuses bad queries with a 400', async () => {
    const past = await orgUsage('from=2000-01-01T00:00:00Z&to=2000-01-02T00:00:00Z');
    assert.deepEqual(past.groups, []);
    assert.equal(past.totals.model_calls, 0);
    const all = await orgUsage(`from=${new Date(Date.now() - 3_600_000).toISOString()}`);
    assert.ok(all.totals.model_calls > 0);
    for (const q of ['group_by=day', 'from=yesterday', 'from=2020-01-02T00:00:00Z&to=2020-01-01T00:00:00Z', 'colour=blue']) {
      const err = await json<{ error: { type: string } }>(await h.api(`/v1/usage?${q}`), 400);
      assert.equal(err.error.type, 'invalid_request_error', q);
    }
  });
});
