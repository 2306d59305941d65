import assert from 'node:assert/strict';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { candidate, chatRequest } from '../fakes/llm-conversation.js';
import { agentWith } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';

type Json = Record<string, any>;

/**
 * A candidate passed over is told the same way whichever kind of routed call it was: a plain call and a stream
 * on the routing interface, and an agent turn routed in-process by the router-proxy actor all go through
 * routeCall, which counts the fallback and logs one `routing fallback` line with the model and the error.
 */
describe('routing fallback: one count and one log line on every kind of routed call', function () {
  this.timeout(30_000);
  let h: Harness;
  let fake: FakeLlmUpstream;
  let seq = 0;

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ roles: ['web', 'router', 'worker'] });
    assert.equal((await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-fake-fallback' } })).status, 200);
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  /** A router whose first candidate is the one that will fail. */
  async function router(id: string): Promise<void> {
    const candidates = [candidate(fake, 'openai', `${id}/first`), candidate(fake, 'openai', `${id}/second`)];
    const res = await h.api(`/v1/routers/${id}`, { method: 'PUT', json: { candidates } });
    assert.equal(res.status, 200, await res.text());
  }

  const fallbackLines = (model: string): Json[] =>
    h
      .logs()
      .split('\n')
      .filter((l) => l.includes('"routing fallback'))
      .map((l) => JSON.parse(l) as Json)
      .filter((l) => l.model === model);

  async function fallbackCount(model: string): Promise<number> {
    const { values } = await h.running.core.metrics.routerFallbacks.get();
    return values.find((v) => v.labels.model === model)?.value ?? 0;
  }

  /** The line routeCall writes, the same on every path; the routing app's logger adds the request id. */
  function assertOneLine(model: string): void {
    const lines = fallbackLines(model);
    assert.equal(lines.length, 1, `one fallback line for ${model}: ${JSON.stringify(lines)}`);
    const [line] = lines;
    assert.equal(line.msg, 'routing fallback');
    assert.equal(line.level, 'warn');
    assert.match(line.err, /503/, 'the error that caused it');
    assert.ok(!JSON.stringify(line).includes('sk-fake-fallback'), 'never the provider key');
  }

  it('a plain call on the routing interface', async () => {
    await router('fbl-plain');
    fake.failNext(503);
    const res = await fetch(`${h.routerUrl}/fbl-plain/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${h.routingKey}` }, body: JSON.stringify(chatRequest({ messages: [{ role: 'user', content: `plain ${++seq}` }], tools: undefined })) });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as Json).service_routing.selected_model, 'fbl-plain/second');
    assertOneLine('fbl-plain/first');
    assert.equal(typeof fallbackLines('fbl-plain/first')[0].request_id, 'string');
    assert.equal(await fallbackCount('fbl-plain/first'), 1);
  });

  it('a streamed call on the routing interface, before its first byte', async () => {
    await router('fbl-stream');
    fake.failNext(503);
    const res = await fetch(`${h.routerUrl}/fbl-stream/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${h.routingKey}` }, body: JSON.stringify({ ...chatRequest({ messages: [{ role: 'user', content: `stream ${++seq}` }], tools: undefined }), stream: true }) });
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.match(text, /"selected_model":"fbl-stream\/second"/);
    assertOneLine('fbl-stream/first');
    assert.equal(await fallbackCount('fbl-stream/first'), 1);
  });

  it('an agent turn routed in-process by the router-proxy actor', async () => {
    await router('fbl-turn');
    const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'routing', router_id: 'fbl-turn' }] });
    const created = await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: {} });
    assert.equal(created.status, 201);
    const sid = ((await created.json()) as { id: string }).id;
    fake.failNext(503);
    fake.reply = { text: 'Routed after a fallback.' };
    const res = await h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', json: { parts: [{ type: 'text', text: `turn ${++seq}` }] } });
    const m = (await res.json()) as { status: string; output: { parts: { text: string }[] } };
    assert.equal(m.status, 'completed', JSON.stringify(m));
    assert.equal(m.output.parts[0].text, 'Routed after a fallback.');
    assert.deepEqual(fake.requests.map((r) => r.body.model), ['up-fbl-turn-first', 'up-fbl-turn-second'], 'the first candidate failed, the second answered');
    assertOneLine('fbl-turn/first');
    assert.equal(await fallbackCount('fbl-turn/first'), 1);
  });
});
