import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { newId } from '../../src/domain/ids.js';
import { UsageStore } from '../../src/store/usage.js';
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
type Page = { groups: Row[]; has_more: boolean; next_cursor: string | null; totals: Figures };

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
    assert.deepEqual((doc.paths['/v1/usage'].get.parameters ?? []).map((p) => p.name).sort(), ['after', 'from', 'group_by', 'limit', 'to']);
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

  describe('groups a page at a time', () => {
    // A day of its own, so the other tests' calls are not in the range.
    const day = 'from=2001-02-03T00:00:00Z&to=2001-02-04T00:00:00Z';
    const at = (h: number) => new Date(Date.UTC(2001, 1, 3, h, 30));
    const sessions = Array.from({ length: 7 }, () => newId('session')).sort();
    const agents = [newId('agent'), newId('agent')].sort();
    let mongo: MongoClient;

    before(async () => {
      const orgId = (await json<{ id: string }>(await h.api('/v1/organization'), 200)).id;
      mongo = await new MongoClient(h.env.MONGODB_URL).connect();
      const db = mongo.db(h.env.TROUPE_MONGODB_DB);
      const store = new UsageStore(db);
      // Each session: two hours, two currencies and an unpriced model, so a group is several records and sums.
      for (const [i, sid] of sessions.entries()) {
        const key = { orgId, routerId: null, agentId: agents[i % 2], sessionId: sid };
        await store.add({ ...key, model: 'm-eur', currency: 'EUR' }, { requests: 1, input: 10 * (i + 1), output: 1, cost: 0.5 }, at(1));
        await store.add({ ...key, model: 'm-eur', currency: 'EUR' }, { requests: 2, input: 5, output: 2, cost: 0.25 }, at(2));
        await store.add({ ...key, model: 'm-usd', currency: 'USD' }, { requests: 1, input: 1, output: 1, cost: 0.1 }, at(3));
        await store.add({ ...key, model: 'm-free', currency: null }, { requests: 3, input: 1, output: 1, cost: 0 }, at(4));
      }
      await store.add({ orgId, routerId: 'r', agentId: null, sessionId: null, model: 'm-usd', currency: 'USD' }, { requests: 4, input: 4, output: 4, cost: 0.4 }, at(5));
      // A record of the first release: no agent, session, currency or cost (routing-interface traffic, unpriced).
      await db.collection('usage').insertOne({ _id: `${orgId}:r:m-old:${at(6).toISOString()}` as never, org_id: orgId, router_id: 'r', model: 'm-old', hour: new Date(Date.UTC(2001, 1, 3, 6)), requests: 5, input_tokens: 5, output_tokens: 5 });
    });
    after(async () => {
      await mongo?.close();
    });

    async function walk(query: string, limit: number): Promise<{ pages: Page[]; rows: Row[] }> {
      const pages: Page[] = [];
      for (let after: string | null = null, i = 0; i < 20; i++) {
        const page: Page = await json<Page>(await h.api(`/v1/usage?${day}&${query}&limit=${limit}${after ? `&after=${after}` : ''}`), 200);
        pages.push(page);
        if (!page.has_more) return { pages, rows: pages.flatMap((p) => p.groups) };
        assert.equal(page.groups.length, limit, 'a page that has more is full');
        after = page.next_cursor;
      }
      throw new Error('more than 20 pages');
    }

    const expectedTotals: Figures = {
      model_calls: 7 * (1 + 2 + 1 + 3) + 4 + 5,
      input_tokens: sessions.reduce((n, _, i) => n + 10 * (i + 1) + 5 + 1 + 1, 0) + 4 + 5,
      output_tokens: 7 * (1 + 2 + 1 + 1) + 4 + 5,
      cost: [{ currency: 'EUR', amount: 7 * 0.75 }, { currency: 'USD', amount: Math.round((7 * 0.1 + 0.4) * 1e6) / 1e6 }],
      unpriced_model_calls: 7 * 3 + 5,
    };

    it('by session: every session once, in id order, routing traffic (null) first, totals of the whole range on each page', async () => {
      const { pages, rows } = await walk('group_by=session', 3);
      assert.equal(pages.length, 3);
      assert.deepEqual(rows.map((r) => r.session_id), [null, ...sessions]);
      for (const p of pages) assert.deepEqual(p.totals, expectedTotals);
      assert.equal(pages[2].next_cursor, null);
      // The routing group folds the legacy record (missing fields) with the priced one.
      assert.deepEqual(rows[0], { session_id: null, model_calls: 9, input_tokens: 9, output_tokens: 9, cost: [{ currency: 'USD', amount: 0.4 }], unpriced_model_calls: 5 });
      assert.deepEqual(rows[3], { session_id: sessions[2], model_calls: 7, input_tokens: 30 + 5 + 1 + 1, output_tokens: 5, cost: [{ currency: 'EUR', amount: 0.75 }, { currency: 'USD', amount: 0.1 }], unpriced_model_calls: 3 });
      // One page holding everything answers the same rows.
      assert.deepEqual((await walk('group_by=session', 100)).rows, rows);
    });

    it('a page can end on the null group, and by agent and by model page the same way', async () => {
      const bySession = await walk('group_by=session', 1);
      assert.deepEqual(bySession.rows.map((r) => r.session_id), [null, ...sessions]);
      const byAgent = await walk('group_by=agent', 1);
      assert.deepEqual(byAgent.rows.map((r) => r.agent_id), [null, ...agents]);
      assert.equal(byAgent.rows[1].model_calls, 4 * 7);
      const byModel = await walk('group_by=model', 2);
      assert.deepEqual(byModel.rows.map((r) => r.model), ['m-eur', 'm-free', 'm-old', 'm-usd']);
      assert.deepEqual(byModel.rows[3], { model: 'm-usd', model_calls: 7 + 4, input_tokens: 7 + 4, output_tokens: 7 + 4, cost: [{ currency: 'USD', amount: Math.round((7 * 0.1 + 0.4) * 1e6) / 1e6 }], unpriced_model_calls: 0 });
    });

    it('refuses a cursor that is not one of this grouping’s, and a bad limit, with a 400', async () => {
      const first = await json<Page>(await h.api(`/v1/usage?${day}&group_by=session&limit=2`), 200);
      assert.ok(first.next_cursor);
      const modelCursor = (await json<Page>(await h.api(`/v1/usage?${day}&group_by=model&limit=1`), 200)).next_cursor;
      for (const q of [`group_by=agent&after=${first.next_cursor}`, `group_by=session&after=${modelCursor}`, 'group_by=session&after=not*base64', `group_by=session&after=${Buffer.from('{"a":1}').toString('base64url')}`, 'limit=0', 'limit=101', 'limit=two']) {
        const err = await json<{ error: { type: string; param?: string } }>(await h.api(`/v1/usage?${day}&${q}`), 400);
        assert.equal(err.error.type, 'invalid_request_error', q);
        assert.ok(['after', 'limit'].includes(err.error.param ?? ''), `${q}: ${err.error.param}`);
      }
    });
  });
});
