import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { TroupeClient } from '../../clients/typescript/src/index.js';
import { candidate } from '../fakes/llm-conversation.js';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { WEBHOOKS, webhookJobId, type WebhookJob } from '../../src/domain/actors/webhook.js';
import { WebhookReceiver } from '../fakes/webhook-receiver.js';
import { agentWith, scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';
import { json, until } from '../support/wait.js';

const text = (t: string) => [{ type: 'text', text: t }];

/** Reads a whole SSE response as text; resolves when the server ends it, rejects if it is cut. */
async function readToEnd(res: Response): Promise<string> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let out = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return out;
    out += decoder.decode(value, { stream: true });
  }
}

/**
 * Graceful drain, each point against a real process sent SIGTERM. The
 * in-process harness holds the agent and (for the web test) the worker that
 * finishes the turn; the process under test shares its database and Redis.
 */
describe('graceful drain on SIGTERM', function () {
  this.timeout(90_000);
  let fake: FakeLlmUpstream;
  const procs: RoleProcess[] = [];

  before(async () => {
    fake = await FakeLlmUpstream.start();
  });
  after(async () => {
    for (const p of procs) p.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    await fake?.close();
  });

  describe('web', () => {
    let h: Harness;
    let web: RoleProcess;
    before(async () => {
      h = await startHarness({ roles: ['web', 'worker'], env: { TROUPE_SESSION_SHARDS: '4' } });
      web = await startRoleProcess(['web'], { ...h.env, PORT: '0', TROUPE_DRAIN_DELAY_MS: '1500', TROUPE_SHUTDOWN_TIMEOUT_MS: '10000' });
      procs.push(web);
    });
    after(async () => h?.close());

    it('turns /readyz 503 at once, answers sync waiters 202, ends SSE with retry:, finishes in-flight requests, exits 0', async () => {
      const base = `http://127.0.0.1:${web.ports.web}`;
      const auth = { Authorization: `Bearer ${h.apiKey}` };
      const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'openai', model: 'slow', base_url: fake.openaiBase }] });
      const sid = (await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { llm_api_key: 'sk-fake' } }), 201)).id;
      assert.equal((await fetch(`${base}/readyz`)).status, 200);
      fake.delayMs = 4000;

      const stream = await fetch(`${base}/v1/sessions/${sid}/stream`, { headers: { ...auth, Accept: 'text/event-stream' } });
      assert.equal(stream.status, 200);
      const streamText = readToEnd(stream);
      const sync = fetch(`${base}/v1/sessions/${sid}/messages/sync`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ parts: text('slow one') }) });
      // A multipart upload whose last bytes are sent only after SIGTERM: an in-flight request.
      const boundary = 'drainboundary';
      let feed!: ReadableStreamDefaultController<Uint8Array>;
      const body = new ReadableStream<Uint8Array>({ start: (c) => void (feed = c) });
      const enc = new TextEncoder();
      feed.enqueue(enc.encode(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nfirst half, `));
      const upload = fetch(`${base}/v1/files`, { method: 'POST', headers: { ...auth, 'content-type': `multipart/form-data; boundary=${boundary}` }, body, duplex: 'half' } as RequestInit);
      await until(async () => fake.requests.length > 0, 10_000); // the turn is at the model: sync is waiting

      const signalled = Date.now();
      web.kill('SIGTERM');
      await web.waitForLog('shutting down', 5000);
      const ready = await fetch(`${base}/readyz`);
      assert.equal(ready.status, 503);
      assert.equal(((await ready.json()) as any).error.code, 'draining');

      const syncRes = await sync;
      assert.equal(syncRes.status, 202, 'the waiter is answered, not cut');
      const message = (await syncRes.json()) as { id: string; status: string };
      assert.ok(Date.now() - signalled < 3000, 'answered at once, well before the 4 s model call ends');
      assert.ok(['queued', 'running'].includes(message.status), message.status);

      const sse = await streamText;
      assert.match(sse, /\nretry: \d+\n/, 'a retry: hint before the end');
      assert.ok(sse.trimEnd().endsWith('reconnect to resume'), 'the hint is the last thing sent');

      feed.enqueue(enc.encode(`second half\r\n--${boundary}--\r\n`));
      feed.close();
      const uploaded = await upload;
      assert.equal(uploaded.status, 201, await uploaded.clone().text());
      const file = (await uploaded.json()) as { id: string };
      const bytes = await (await h.api(`/v1/files/${file.id}/content`)).text();
      assert.equal(bytes, 'first half, second half', 'the whole upload arrived');

      assert.equal(await web.exited, 0, 'a clean exit');
      // Nothing lost: the message the waiter was told to poll completes (on the harness's worker).
      const done = await until(async () => {
        const m = await json<{ status: string }>(await h.api(`/v1/sessions/${sid}/messages/${message.id}`), 200);
        return m.status === 'completed' ? m : null;
      }, 30_000);
      assert.equal(done.status, 'completed');
    });
    it('refuses new streams 503 with Retry-After while draining; the typed client waits out the hints, backs off, and resumes elsewhere with nothing lost or repeated', async () => {
      const drainMs = 5000;
      const w = await startRoleProcess(['web'], { ...h.env, PORT: '0', TROUPE_DRAIN_DELAY_MS: String(drainMs), TROUPE_SHUTDOWN_TIMEOUT_MS: '10000' });
      procs.push(w);
      const draining = `http://127.0.0.1:${w.ports.web}`;
      const { agentId } = await scriptedAgent(h, [{ text: 'one' }, { text: 'two' }]);
      const sid = (await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: {} }), 201)).id;
      await json(await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: text('first') } }), 201);

      // A load balancer in the client's fetch: the draining process until it has gone, then another one.
      let target = draining;
      const connects: { at: number; to: string; status: number; retryAfter: string | null }[] = [];
      const lb: typeof fetch = async (input, init) => {
        const url = new URL(String(input));
        const to = target;
        const stream = url.pathname.endsWith('/stream');
        try {
          const res = await fetch(to + url.pathname + url.search, init);
          if (stream) connects.push({ at: Date.now(), to, status: res.status, retryAfter: res.headers.get('Retry-After') });
          return res;
        } catch (err) {
          if (stream) connects.push({ at: Date.now(), to, status: 0, retryAfter: null });
          throw err;
        }
      };
      const client = new TroupeClient({ baseUrl: 'http://lb.invalid', apiKey: h.apiKey, fetch: lb });
      const warnings: Error[] = [];
      const onWarning = (warning: Error) => warnings.push(warning);
      process.on('warning', onWarning);
      const stop = new AbortController();
      const seen: number[] = [];
      let idles = 0;
      const reading = (async () => {
        for await (const ev of client.sessions.stream(sid, { signal: stop.signal })) {
          if (!('sequence_number' in ev)) continue;
          seen.push(ev.sequence_number);
          if (ev.type === 'session.status_changed' && ev.data.to === 'idle' && ++idles === 2) return;
        }
      })();
      try {
        await until(async () => idles === 1, 20_000);
        const killedAt = Date.now();
        w.kill('SIGTERM');
        await w.waitForLog('shutting down', 5000);
        // Appended while the client is turned away: it must arrive once the client reaches another process.
        await json(await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: text('second') } }), 201);

        const refused = await fetch(`${draining}/v1/sessions/${sid}/stream`, { headers: { Authorization: `Bearer ${h.apiKey}`, Accept: 'text/event-stream' } });
        assert.equal(refused.status, 503);
        assert.equal(refused.headers.get('Retry-After'), '1');
        const body = (await refused.json()) as { error: { type: string; code: string } };
        assert.deepEqual([body.error.type, body.error.code], ['service_unavailable', 'draining']);

        assert.equal(await w.exited, 0, 'a clean exit');
        const drainedAt = Date.now();
        target = h.baseUrl;
        await Promise.race([reading, new Promise((_, reject) => setTimeout(() => reject(new Error(`no second idle; seen ${seen.join(',')}`)), 30_000))]);

        const turnedAway = connects.filter((c) => c.to === draining && c.at > killedAt && c.at <= drainedAt);
        assert.ok(turnedAway.length >= 1, 'the client tried the draining process again');
        assert.ok(turnedAway.every((c) => c.status === 0 || (c.status === 503 && c.retryAfter === '1')), JSON.stringify(turnedAway));
        // The stream's `retry: 1000`, then each 503's Retry-After: 1, waited out and backed off (the old client came
        // back after 250 ms and then every 0.5, 1, 2 s: four or more times in the 5 s).
        const times = [killedAt, ...turnedAway.map((c) => c.at)];
        const gaps = times.slice(1).map((t, i) => t - times[i]);
        assert.ok(gaps.every((g) => g >= 1000), `reconnect gaps ${gaps.join(', ')} ms`);
        assert.ok(turnedAway.length <= 3, `${turnedAway.length} reconnects to the draining process in ${drainedAt - killedAt} ms`);

        const ledger = await json<{ events: { sequence_number: number }[] }>(await h.api(`/v1/sessions/${sid}/events?limit=100`), 200);
        assert.deepEqual(seen, ledger.events.map((e) => e.sequence_number), 'every event once, in order, across the drain');
        assert.deepEqual(seen, seen.map((_, i) => i + 1));
        assert.equal(getEventListeners(stop.signal, 'abort').length, 0, 'no abort listener left behind');
        assert.deepEqual(warnings.map((x) => x.name), []);
      } finally {
        process.off('warning', onWarning);
        stop.abort();
      }
    });
  });

  describe('router', () => {
    let h: Harness;
    let router: RoleProcess;
    before(async () => {
      fake.reset();
      h = await startHarness({ roles: ['web'] });
      router = await startRoleProcess(['router'], { ...h.env, ROUTER_PORT: '0', TROUPE_DRAIN_DELAY_MS: '1000', TROUPE_SHUTDOWN_TIMEOUT_MS: '10000' });
      procs.push(router);
    });
    after(async () => h?.close());

    it('turns /readyz 503 at once, finishes routed calls in flight (streamed or not), records their usage, exits 0', async () => {
      const base = `http://127.0.0.1:${router.ports.router}`;
      assert.equal((await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-fake-upstream' } })).status, 200);
      assert.equal((await h.api('/v1/routers/drain', { method: 'PUT', json: { candidates: [candidate(fake, 'openai', 'openai/drain')] } })).status, 200);
      assert.equal((await fetch(`${base}/readyz`)).status, 200);
      fake.reply = { text: 'Answered in full after the signal.', inputTokens: 10, outputTokens: 5 };
      fake.delayMs = 1500; // both calls are still at the upstream when the signal comes
      fake.eventDelayMs = 50;
      const routed = (stream: boolean) =>
        fetch(`${base}/drain/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${h.routingKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'service/routing', stream, messages: [{ role: 'user', content: `drain ${stream}` }] }),
        });
      const plain = routed(false);
      const streamed = routed(true);
      await until(async () => fake.requests.length >= 2, 10_000);

      router.kill('SIGTERM');
      await router.waitForLog('shutting down', 5000);
      const ready = await fetch(`${base}/readyz`);
      assert.equal(ready.status, 503);
      assert.equal(((await ready.json()) as any).error.code, 'draining');

      const p = await plain;
      assert.equal(p.status, 200);
      assert.equal(((await p.json()) as any).choices[0].message.content, 'Answered in full after the signal.');
      const s = await streamed;
      assert.equal(s.status, 200);
      const sse = await readToEnd(s);
      const text = [...sse.matchAll(/^data: (\{.*\})$/gm)].map((m) => JSON.parse(m[1]).choices?.[0]?.delta?.content ?? '').join('');
      assert.equal(text, 'Answered in full after the signal.');
      assert.ok(sse.trimEnd().endsWith('data: [DONE]'), 'the stream ends normally');
      assert.equal(await router.exited, 0, 'a clean exit');
      // The usage buffer is written on the way out: both calls are counted.
      const usage = await json<{ groups: { model: string; model_calls: number; input_tokens: number }[] }>(await h.api('/v1/usage?group_by=model'), 200);
      const row = usage.groups.find((g) => g.model === 'openai/drain');
      assert.deepEqual([row?.model_calls, row?.input_tokens], [2, 20]);
    });
  });

  describe('worker', () => {
    let h: Harness;
    before(async () => {
      fake.reset();
      h = await startHarness({ roles: ['web'], env: { TROUPE_SESSION_SHARDS: '4', TROUPE_ACTOR_LOCK_MS: '2000' } });
    });
    after(async () => h?.close());

    it('finishes or hands back the current turn, exits 0, and the turn completes exactly once', async () => {
      const env = { ...h.env, TROUPE_SESSION_SHARDS: '4', TROUPE_ACTOR_LOCK_MS: '2000', TROUPE_SHUTDOWN_TIMEOUT_MS: '10000' };
      const first = await startRoleProcess(['worker'], env);
      procs.push(first);
      const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'openai', model: 'slow', base_url: fake.openaiBase }] });
      const sid = (await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { llm_api_key: 'sk-fake' } }), 201)).id;
      fake.delayMs = 1500;
      await json(await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: text('mid-turn') } }), 201);
      await until(async () => fake.requests.length > 0, 10_000);
      first.kill('SIGTERM');
      assert.equal(await first.exited, 0, 'a clean exit within the shutdown timeout');
      // A second worker takes over whatever was handed back.
      procs.push(await startRoleProcess(['worker'], env));
      const messages = await until(async () => {
        const page = await json<{ messages: { id: string; status: string }[] }>(await h.api(`/v1/sessions/${sid}/messages`), 200);
        return page.messages.length === 1 && page.messages[0].status === 'completed' ? page.messages : null;
      }, 30_000);
      assert.equal(messages.length, 1);
      const events = await json<{ events: { type: string; sequence_number: number }[] }>(await h.api(`/v1/sessions/${sid}/events?limit=100`), 200);
      const seqs = events.events.map((e) => e.sequence_number);
      assert.deepEqual(seqs, seqs.map((_, i) => seqs[0] + i), 'no gap or duplicate in the ledger');
      assert.equal(events.events.filter((e) => e.type === 'assistant.message_completed').length, 1, 'the model answer is recorded once');
    });
  });

  describe('webhooks', () => {
    let h: Harness;
    let rx: WebhookReceiver;
    before(async () => {
      rx = await WebhookReceiver.start();
      h = await startHarness({ roles: ['web'], env: { TROUPE_WEBHOOKS_ALLOW_PRIVATE: '1' } });
    });
    after(async () => {
      await h?.close();
      await rx?.close();
    });

    it('finishes the delivery attempt in flight, records it once, exits 0, and nothing is sent again', async () => {
      const env = { ...h.env, METRICS_PORT: '0', TROUPE_SHUTDOWN_TIMEOUT_MS: '10000' };
      const first = await startRoleProcess(['webhooks'], env);
      procs.push(first);
      await first.waitForLog('metrics listening');
      const { agentId, orgId } = await scriptedAgent(h, [{ text: 'done' }]);
      await json(await h.api(`/v1/agents/${agentId}/webhook`, { method: 'PUT', json: { webhook_url: `${rx.url}/hook`, event_types: ['batch.completed'] } }), 200);
      rx.answer({ status: 200, delayMs: 2000 }); // still at the receiver when the signal comes
      const job: WebhookJob = { kind: 'batch.lifecycle', org_id: orgId, agent_id: agentId, batch_id: 'bat_drain', type: 'batch.completed' };
      await h.running.core.plane.queues.queue(WEBHOOKS.name).add(job.kind, job, { jobId: webhookJobId(job), attempts: 1 });
      await rx.waitFor(1, '/hook', 10_000);

      first.kill('SIGTERM');
      assert.equal(await first.exited, 0, 'a clean exit within the shutdown timeout');
      // A second process would send again whatever was handed back; the delivery was finished instead.
      const second = await startRoleProcess(['webhooks'], env);
      procs.push(second);
      await second.waitForLog('metrics listening');
      const { deliveries } = await json<{ deliveries: { event_id: string; status: string; attempts: number }[] }>(await h.api(`/v1/agents/${agentId}/webhook/deliveries`), 200);
      assert.deepEqual(deliveries.map((d) => [d.event_id, d.status, d.attempts]), [['bat_drain:batch.completed', 'succeeded', 1]]);
      await new Promise((r) => setTimeout(r, 1000));
      assert.equal(rx.received.length, 1, 'delivered once');
    });
  });
});
