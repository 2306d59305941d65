import assert from 'node:assert/strict';
import type { LlmRequest } from '../../src/lib/llm/types.js';
import { conversationId } from '../../src/lib/routing/conversation.js';
import { planEffort } from '../../src/lib/routing/effort.js';
import { select, type Needs } from '../../src/lib/routing/select.js';
import type { CandidateDoc, RouterDoc } from '../../src/domain/views/router.js';

const cand = (model: string, extra: Partial<CandidateDoc> = {}): CandidateDoc => ({
  model,
  provider: 'openai',
  upstream_model: model,
  api_key_credential: 'K',
  reasoning_efforts: ['off', 'low', 'high'],
  tools: true,
  thinking: false,
  context_window: 1000,
  input_price: 1,
  output_price: 1,
  ...extra,
});
const router = (candidates: CandidateDoc[], policy: RouterDoc['policy'] = 'priority'): RouterDoc => ({ _id: 'o:r', org_id: 'o', router_id: 'r', default: true, policy, candidates, created_at: new Date(), updated_at: new Date() });
const needs = (n: Partial<Needs> = {}): Needs => ({ tools: false, thinking: false, promptTokens: 10, maxTokens: 10, ...n });

describe('router selection', () => {
  it('orders eligible candidates by policy, sticky first', () => {
    const r = router([cand('a', { input_price: 9 }), cand('b', { input_price: 1 }), cand('c', { tools: false })], 'cheapest');
    assert.deepEqual(select(r, needs(), null).order.map((c) => c.model), ['b', 'c', 'a']);
    assert.deepEqual(select(r, needs({ tools: true }), null).order.map((c) => c.model), ['b', 'a']);
    assert.deepEqual(select(r, needs(), 'a').order.map((c) => c.model), ['a', 'b', 'c']);
    assert.deepEqual(select(r, needs({ tools: true }), 'c').order.map((c) => c.model), ['b', 'a']);
  });

  it('names the effort level when nothing supports it', () => {
    assert.throws(() => select(router([cand('a')]), needs({ effort: 'max', effortLabel: 'max' }), null), /supports reasoning effort max/);
    assert.throws(() => select(router([cand('a', { context_window: 15 })]), needs(), null), /context window/);
  });

  it('lets the latest configuration update set the effort, and requires a request-level one', () => {
    const base: LlmRequest = { items: [{ kind: 'config_update', effort: 'high' }, { kind: 'config_update', effort: 'off' }], stream: false };
    assert.throws(() => planEffort(base), /reasoning.effort is required/);
    assert.deepEqual(planEffort({ ...base, effort: 'low' }), { effective: 'off', requestLevel: 'low', updates: true });
  });

  it('hashes only the opening of a conversation', () => {
    const a: LlmRequest = { system: 's', items: [{ kind: 'message', role: 'user', content: [{ type: 'text', text: 'hi' }] }], stream: false };
    const b: LlmRequest = { ...a, items: [...a.items, { kind: 'message', role: 'assistant', content: [{ type: 'text', text: 'yo' }] }] };
    assert.equal(conversationId(a), conversationId(b));
    assert.notEqual(conversationId(a), conversationId({ ...a, system: 't' }));
  });
});
