import assert from 'node:assert/strict';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { candidate } from '../fakes/llm-conversation.js';
import { agentWith } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { until } from '../support/wait.js';

const ANSWER_CAP = 4 * 1024 * 1024;
const EVENT_CAP = 256 * 1024;
/** What the hostile upstream would send if nothing stopped it. */
const HOSTILE_BYTES = 200 * 1024 * 1024;
/**
 * What it may get out before the cut: the cap, plus what the kernel's socket buffers on the way hold (a few MiB on
 * loopback) and one 64 KiB write. Reading it all would be the whole 200 MiB.
 */
const SENT_BOUND = (cap: number) => cap + 16 * 1024 * 1024;

/** A tenant-supplied base_url whose upstream answers without end: the call stops at the cap and fails with its code. */
describe('upstream answers past their caps', function () {
  this.timeout(60_000);
  let h: Harness;
  let fake: FakeLlmUpstream;

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ env: { TROUPE_UPSTREAM_MAX_ANSWER_BYTES: String(ANSWER_CAP), TROUPE_UPSTREAM_MAX_EVENT_BYTES: String(EVENT_CAP), TROUPE_SESSION_SHARDS: '4' } });
    assert.equal((await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-fake-caps' } })).status, 200);
    assert.equal((await h.api('/v1/routers/hostile', { method: 'PUT', json: { candidates: [candidate(fake, 'openai', 'openai/m')] } })).status, 200);
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  const routed = (stream: boolean) =>
    fetch(`${h.routerUrl}/hostile/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.routingKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'service/routing', messages: [{ role: 'user', content: 'Hi.' }], stream }),
    });

  /** The process still serves: a normal routed call answers. */
  async function stillServes(): Promise<void> {
    fake.reset();
    const res = await routed(false);
    assert.equal(res.status, 200);
    assert.match(JSON.stringify(await res.json()), /Hello from the fake/);
  }

  it('a non-streamed answer past the cap: 502 upstream_response_too_large in the vendor envelope, upstream cut', async () => {
    fake.oversize = { bytes: HOSTILE_BYTES };
    const res = await routed(false);
    assert.equal(res.status, 502);
    const body = (await res.json()) as { error: { code: string; type: string; message: string } };
    assert.equal(body.error.code, 'upstream_response_too_large');
    assert.match(body.error.message, /too large/);
    await until(async () => fake.closedEarly === 1, 10_000);
    assert.ok(fake.oversizeSent < SENT_BOUND(ANSWER_CAP), `the upstream sent ${fake.oversizeSent} bytes before it was cut`);
    await stillServes();
  });

  it('a streamed SSE line that never ends: 502 upstream_response_too_large before the first byte, upstream cut', async () => {
    fake.oversize = { bytes: HOSTILE_BYTES };
    const res = await routed(true);
    assert.equal(res.status, 502);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'upstream_response_too_large');
    await until(async () => fake.closedEarly === 1, 10_000);
    assert.ok(fake.oversizeSent < SENT_BOUND(EVENT_CAP), `the upstream sent ${fake.oversizeSent} bytes before it was cut`);
    await stillServes();
  });

  it('a routed stream that has started: ends with the format\'s error event naming upstream_response_too_large', async () => {
    fake.oversize = { bytes: HOSTILE_BYTES, afterDeltas: 3 };
    const res = await routed(true);
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.match(text, /"delta":\{"content":/, 'the deltas before the hostile line reached the client');
    assert.match(text, /"error":\{[^}]*upstream_response_too_large/);
    assert.match(text, /data: \[DONE\]\n\n$/);
    await until(async () => fake.closedEarly === 1, 10_000);
    assert.ok(fake.oversizeSent < SENT_BOUND(EVENT_CAP), `the upstream sent ${fake.oversizeSent} bytes before it was cut`);
    await stillServes();
  });

  it("an agent turn's model call: the message fails with upstream_response_too_large, not retried, and the session goes on", async () => {
    const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'openai', model: 'gpt-test', base_url: fake.openaiBase }] });
    const created = await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { llm_api_key: 'sk-caps' } });
    const sid = ((await created.json()) as { id: string }).id;
    const send = async () => {
      const res = await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: 'hi' }] } });
      assert.equal(res.status, 201);
      return ((await res.json()) as { message: { id: string } }).message.id;
    };
    const message = async (id: string) => (await (await h.api(`/v1/sessions/${sid}/messages/${id}`)).json()) as { status: string; error: string | null; attempt: number };
    fake.oversize = { bytes: HOSTILE_BYTES };
    const mid = await send();
    const failed = await until(async () => {
      const m = await message(mid);
      return m.status === 'failed' ? m : null;
    }, 30_000);
    assert.match(String(failed.error), /upstream_response_too_large/);
    assert.equal(failed.attempt, 1, 'a hostile answer is not asked for again');
    assert.equal(fake.requests.length, 1);
    assert.ok(fake.oversizeSent < SENT_BOUND(EVENT_CAP), `the upstream sent ${fake.oversizeSent} bytes before it was cut`);
    fake.reset();
    const next = await send();
    await until(async () => (await message(next)).status === 'completed', 30_000);
  });
});
