import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { join } from 'node:path';
import {
  ConflictError,
  DeployError,
  deployFolder,
  InvalidRequestError,
  NotFoundError,
  TroupeClient,
  TroupeConnectionError,
  verifyWebhook,
  WEBHOOK_HEADERS,
  type SessionEvent,
} from '../../clients/typescript/src/index.js';
import { signatureHeader } from '../../src/lib/webhooks/signature.js';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { agentWith } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/wait.js';

const EXAMPLE = join(__dirname, '../../../examples/weather-agent');

/** The TypeScript client against a real Troupe: deploy, typed errors, helpers, and a stream that survives dropped connections. */
describe('TypeScript client', function () {
  this.timeout(60_000);
  let h: Harness;
  let client: TroupeClient;
  let agentId: string;
  let fake: FakeLlmUpstream;
  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ env: { TROUPE_SESSION_SHARDS: '4', TROUPE_MODELS_ALLOW_PRIVATE: '1' } });
    client = new TroupeClient({ baseUrl: h.baseUrl, apiKey: h.apiKey });
    const progress: number[] = [];
    const deployed = await deployFolder(client, EXAMPLE, { onProgress: (sent) => progress.push(sent) });
    assert.equal(deployed.created, true);
    assert.equal(deployed.agent.name, 'weather-agent');
    assert.equal(progress.at(-1), deployed.packed.size_bytes, 'the progress callback reached the archive size');
    agentId = deployed.agent.id;
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });

  it('publishes a new version when the agent exists, and the same folder hashes the same', async () => {
    const again = await deployFolder(client, EXAMPLE);
    assert.equal(again.created, false);
    assert.equal(again.agent.id, agentId);
    assert.equal(again.version?.number, 2);
    assert.equal(again.agent.active_version_id, again.version?.id);
    const versions = await client.agents.listVersions(agentId);
    assert.equal(versions.versions.length, 2);
    assert.equal(versions.versions[0].source_snapshot_id === versions.versions[1].source_snapshot_id, false);
  });

  it('explains in plain words when the uploaded archive does not verify', async () => {
    // A fetch that flips one byte of the upload on the way: same size, different SHA-256.
    const corrupting: typeof fetch = async (url, init) => {
      if (init?.method === 'PUT' && init.body instanceof ReadableStream) {
        const bytes = new Uint8Array(await new Response(init.body).arrayBuffer());
        bytes[bytes.length - 1] ^= 0xff;
        return fetch(url, { ...init, body: bytes, duplex: undefined } as RequestInit);
      }
      return fetch(url, init);
    };
    const flaky = new TroupeClient({ baseUrl: h.baseUrl, apiKey: h.apiKey, fetch: corrupting });
    await assert.rejects(deployFolder(flaky, EXAMPLE, { createNew: true }), (err: unknown) => {
      assert.ok(err instanceof DeployError);
      assert.match(err.message, /^The upload did not arrive intact, so nothing was deployed\. SHA-256 mismatch: reserved [0-9a-f]{64}, uploaded [0-9a-f]{64}\. Run the deploy again\.$/);
      assert.ok(err.snapshotId);
      return true;
    });
    assert.equal((await client.agents.list()).agents.length, 1, 'no agent was created');
  });

  it('throws typed errors that carry the error shape', async () => {
    await assert.rejects(client.sessions.get('ses_missing'), (err: unknown) => {
      assert.ok(err instanceof NotFoundError);
      assert.equal(err.status, 404);
      assert.equal(err.type, 'not_found_error');
      assert.match(err.message, /ses_missing/);
      assert.ok(err.requestId);
      return true;
    });
    await assert.rejects(client.sessions.create(agentId, { llm_id: '' }), (err: unknown) => err instanceof InvalidRequestError && err.status === 400 && err.param !== undefined);
    const dead = new TroupeClient({ baseUrl: 'http://127.0.0.1:1', apiKey: h.apiKey });
    await assert.rejects(dead.agents.list(), TroupeConnectionError);
  });

  it('retries a call whose answer was lost with the same idempotency key, so the work is done once', async () => {
    // The server does the work; the answer never reaches the caller (a connection reset on the way back).
    const posts: { path: string; key: string | null; body: string }[] = [];
    let lose = 0;
    const lossy = new TroupeClient({
      baseUrl: h.baseUrl,
      apiKey: h.apiKey,
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        if (init?.method !== 'POST') return res;
        posts.push({ path: new URL(String(input)).pathname, key: new Headers(init.headers).get('Idempotency-Key'), body: String(init.body) });
        if (lose === 0) return res;
        lose--;
        await res.arrayBuffer();
        throw new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } });
      },
    });
    const session = await client.sessions.create(agentId);
    lose = 1;
    const sent = await lossy.sessions.send(session.id, 'Weather in Oslo?');
    assert.equal(posts.length, 2, 'sent again after the lost answer');
    assert.ok(posts[0].key, 'an Idempotency-Key the caller did not have to make');
    assert.equal(posts[1].key, posts[0].key);
    const userMessages = (await client.sessions.events(session.id, { limit: 100 })).events.filter((e) => e.type === 'user.message');
    assert.deepEqual(userMessages.map((e) => e.message_id), [sent.message!.id], 'one message, the one the retry was answered with');

    posts.length = 0;
    lose = 1;
    const run = `retry-${Date.now()}`;
    const batch = await lossy.batches.create([{ agent_id: agentId, message: { content: [{ type: 'text', text: 'hi' }] }, metadata: { run } }]);
    assert.equal(posts.length, 2);
    assert.equal(JSON.parse(posts[1].body).idempotency_key, JSON.parse(posts[0].body).idempotency_key);
    const made = (await client.sessions.list({ metadata: { run } })).sessions;
    assert.deepEqual(made.map((s) => s.id), batch.sessions.map((s) => s.session_id), 'one batch, one session');

    // Creating a session takes no idempotency key: sending it twice could make two, so a lost answer is the caller's to handle.
    posts.length = 0;
    lose = 1;
    await assert.rejects(lossy.sessions.create(agentId), TroupeConnectionError);
    assert.equal(posts.length, 1);
  });

  it('streams a session across dropped connections with no gap and no duplicate', async () => {
    const proxy = new TcpProxy(h.running.ports.web!);
    const viaProxy = new TroupeClient({ baseUrl: await proxy.start(), apiKey: h.apiKey });
    try {
      const started = await client.sessions.start(agentId, 'Weather in Oslo?', { session: { metadata: { suite: 'client-stream' } } });
      const sid = started.session.id;
      const seen: SessionEvent[] = [];
      const reconnects: (string | null)[] = [];
      let asked = 1;
      // Each cut comes within a second of the connection opening, which backs off: the cap keeps this test quick.
      const stream = viaProxy.sessions.stream(sid, { reconnectDelayMs: 50, maxReconnectDelayMs: 400, onReconnect: (r) => reconnects.push(r.lastEventId) });
      for await (const ev of stream) {
        if (!('sequence_number' in ev)) continue;
        seen.push(ev);
        // Cut the connection after every other event: events appended while it is down must still arrive, once.
        if (ev.sequence_number % 2 === 1) proxy.dropAll();
        if (ev.type === 'tool.call_requested' && (ev.data as { tool_name?: string }).tool_name === 'get_forecast') {
          const [call] = (await client.sessions.pendingToolCalls(sid)).filter((c) => c.kind === 'external');
          await client.sessions.submitToolResult(sid, call, { city: 'Oslo', summary: 'sunny', high_c: 20, low_c: 9 });
          await assert.rejects(client.sessions.submitToolResult(sid, call, { city: 'Oslo', summary: 'again', high_c: 1, low_c: 0 }), ConflictError);
        }
        if (ev.type === 'session.status_changed' && (ev.data as { to?: string }).to === 'idle') {
          // The client backs off while connections keep ending, so one message's events can all arrive in two
          // connections: ask again (up to 3 messages) until the stream has been cut 3 times.
          if (proxy.drops >= 3 || ++asked === 3) break;
          await client.sessions.send(sid, 'Weather in Oslo?');
        }
        if (seen.length > 200) assert.fail('the stream did not reach idle');
      }
      const ledger = (await client.sessions.events(sid, { limit: 100 })).events;
      assert.deepEqual(
        seen.map((e) => e.sequence_number),
        ledger.map((e) => e.sequence_number),
      );
      assert.deepEqual(seen, ledger, 'the streamed events are the ledger, byte for byte');
      assert.deepEqual(
        seen.map((e) => e.sequence_number),
        seen.map((_, i) => i + 1),
      );
      // The last cut may come after the final event is already in the socket buffer; the loop then ends
      // without needing to reconnect, so every cut but the last must have been followed by a resume.
      assert.ok(proxy.drops >= 3 && reconnects.length >= proxy.drops - 1, `cut ${proxy.drops} connections, reconnected ${reconnects.length} times`);
      assert.ok(reconnects.every((id) => id?.startsWith(`${sid}:`)));
      const answer = await client.sessions.message(sid, started.message!.id);
      assert.equal(answer.status, 'completed');
      const text = answer.output.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
      assert.equal(text, 'Oslo today: a high of 20 °C (68 °F), sunny.', 'the scripted answer uses the submitted tool result');
    } finally {
      await proxy.close();
    }
  });

  it('backs off from a stream that keeps ending at once, and leaves no abort listener behind', async () => {
    const proxy = new TcpProxy(h.running.ports.web!);
    const viaProxy = new TroupeClient({ baseUrl: await proxy.start(), apiKey: h.apiKey });
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    const stop = new AbortController();
    try {
      const session = await client.sessions.create(agentId);
      const opens: number[] = [];
      const attempts: number[] = [];
      const windowMs = 4000;
      const started = Date.now();
      setTimeout(() => stop.abort(), windowMs);
      // Every connection is accepted and then cut at once, as a process shutting down did.
      const stream = viaProxy.sessions.stream(session.id, {
        signal: stop.signal,
        onOpen: () => (opens.push(Date.now() - started), setImmediate(() => proxy.dropAll())),
        onReconnect: (r) => void attempts.push(r.attempt),
      });
      for await (const item of stream) assert.fail(`a new session has no events: ${JSON.stringify(item)}`);
      // 250 ms doubled with jitter: reconnects at ≥ 0.25, 0.75, 1.75 and 3.75 s, so at most 5 connections in 4 s;
      // resetting on every accepted stream came back every 250 ms (16).
      assert.ok(opens.length >= 3 && opens.length <= 5, `connections at ${opens.join(', ')} ms`);
      assert.deepEqual(attempts.slice(0, 3), [1, 2, 3], 'an accepted stream that ended at once does not reset the count');
      const gaps = opens.slice(1).map((t, i) => t - opens[i]);
      gaps.forEach((g, i) => assert.ok(g >= 250 * 2 ** i, `gap ${i + 1} is ${g} ms: ${gaps.join(', ')}`));
      assert.equal(getEventListeners(stop.signal, 'abort').length, 0, 'no abort listener left behind');
      assert.deepEqual(warnings.map((w) => w.name), []);
    } finally {
      process.off('warning', onWarning);
      stop.abort();
      await proxy.close();
    }
  });

  it('yields live deltas when asked, and they add up to the answer', async () => {
    const { agentId: streaming } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'openai-responses', model: 'gpt-test', base_url: fake.openaiBase }] });
    fake.reply = { text: 'Streaming words arrive in pieces.' };
    fake.firstEventDelayMs = 300;
    const session = await client.sessions.create(streaming, { llm_api_key: 'k' });
    const deltas: string[] = [];
    const seqs: number[] = [];
    let opened!: () => void;
    const open = new Promise<void>((r) => (opened = r));
    const consuming = (async () => {
      for await (const item of client.sessions.stream(session.id, { deltas: true, onOpen: () => opened() })) {
        if (item.type === 'assistant.delta') deltas.push(String((item.data as { text?: string }).text ?? ''));
        else seqs.push(item.sequence_number);
        if (item.type === 'session.status_changed' && (item.data as { to?: string }).to === 'idle') break;
        if (seqs.length > 50) assert.fail('no idle');
      }
    })();
    // Deltas are never replayed, so the message goes out once the stream is open.
    await open;
    await client.sessions.send(session.id, 'stream please');
    await consuming;
    assert.ok(deltas.length > 1, `deltas arrive in pieces: ${deltas.join('|')}`);
    assert.equal(deltas.join(''), 'Streaming words arrive in pieces.');
    assert.deepEqual(seqs, seqs.map((_, i) => i + 1));
  });

  it('resumes from a given event id and lists sessions by metadata', async () => {
    // Its own session, run to idle, so the test passes alone (--grep) as well as after the others.
    const suite = `resume-${Date.now()}`;
    const started = await client.sessions.start(agentId, 'Weather in Oslo?', { session: { metadata: { suite } } });
    const call = await until(async () => (await client.sessions.pendingToolCalls(started.session.id)).find((c) => c.kind === 'external'), 10_000);
    await client.sessions.submitToolResult(started.session.id, call, { city: 'Oslo', summary: 'sunny', high_c: 20, low_c: 9 });
    await until(async () => (await client.sessions.message(started.session.id, started.message!.id)).status === 'completed', 20_000);
    const listed = (await client.sessions.list({ metadata: { suite } })).sessions;
    assert.deepEqual(listed.map((s) => s.id), [started.session.id]);
    const mine = listed[0];
    assert.equal((await client.sessions.list({ metadata: { suite: 'nobody' } })).sessions.length, 0);
    const ctl = new AbortController();
    const got: number[] = [];
    for await (const ev of client.sessions.stream(mine.id, { after: `${mine.id}:5`, signal: ctl.signal })) {
      if ('sequence_number' in ev) got.push(ev.sequence_number);
      if (got.length === 3) ctl.abort();
    }
    assert.deepEqual(got, [6, 7, 8]);
  });

  it('walks every page of a list with each()', async () => {
    const run = `each-${Date.now()}`;
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await client.sessions.create(agentId, { metadata: { run } })).id);
    const pages: (string | undefined)[] = [];
    const seen: string[] = [];
    for await (const s of client.each('sessions', (page) => (pages.push(page.after), client.sessions.list({ ...page, limit: 2, metadata: { run } })))) seen.push(s.id);
    assert.deepEqual(seen, [...made].reverse(), 'every session once, newest first');
    assert.equal(pages.length, 3);
    assert.equal(pages[0], undefined);
    await client.sessions.send(made[0], 'Weather in Oslo?');
    await until(async () => (await client.sessions.pendingToolCalls(made[0])).length === 1, 10_000);
    const seqs: number[] = [];
    for await (const ev of client.each('events', (page) => client.sessions.events(made[0], { ...page, limit: 2 }))) seqs.push(ev.sequence_number);
    assert.ok(seqs.length >= 5);
    assert.deepEqual(seqs, seqs.map((_, i) => i + 1), 'the ledger, gapless, across pages');
  });

  it('sync with a timeout returns by it, showing the message waiting on its external tool to onPoll', async () => {
    const session = await client.sessions.create(agentId);
    const polled: string[] = [];
    const started = Date.now();
    const m = await client.sessions.sync(session.id, 'Weather?', { timeoutMs: 2_000, pollMs: 100, onPoll: (x) => void polled.push(x.status) });
    const took = Date.now() - started;
    assert.ok(took < 6_000, `returned after ${took} ms, past its 2 s timeout (the server's sync wait is 60 s)`);
    assert.equal(m.status, 'requires_action');
    assert.ok(polled.includes('requires_action'), `onPoll saw ${polled.join(', ')}`);
    const [call] = await client.sessions.pendingToolCalls(session.id);
    await client.sessions.submitToolResult(session.id, call, { city: 'Oslo', summary: 'fog', high_c: 3, low_c: 1 });
    assert.equal((await client.sessions.waitForMessage(session.id, m.id, { timeoutMs: 20_000, pollMs: 100 })).status, 'completed');
  });

  it('sync waits for a terminal message; batches poll until terminal', async () => {
    const session = await client.sessions.create(agentId);
    const polled: string[] = [];
    const pending = client.sessions.sync(session.id, 'Weather?', { timeoutMs: 20_000, pollMs: 100, onPoll: (m) => void polled.push(m.status) });
    // The external tool waits for us, as it would for the client's own service.
    let answered = false;
    for (let i = 0; i < 200 && !answered; i++) {
      const calls = await client.sessions.pendingToolCalls(session.id);
      for (const c of calls.filter((x) => x.kind === 'external')) {
        await client.sessions.submitToolResult(session.id, c, { city: 'Oslo', summary: 'fog', high_c: 3, low_c: 1 });
        answered = true;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    const done = await pending;
    assert.equal(done.status, 'completed');
    const batch = await client.batches.create([{ agent_id: agentId, message: { content: [{ type: 'text', text: 'hi' }] } }]);
    const progress: string[] = [];
    const answering = (async () => {
      const sid = batch.sessions[0].session_id!;
      for (let i = 0; i < 200; i++) {
        const [call] = await client.sessions.pendingToolCalls(sid);
        if (call?.kind === 'external') return client.sessions.submitToolResult(sid, call, { city: 'Oslo', summary: 'snow', high_c: -2, low_c: -8 });
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const final = await client.batches.wait(batch.batch_id, { timeoutMs: 20_000, pollMs: 100, onProgress: (b) => void progress.push(b.status) });
    await answering;
    assert.equal(final.status, 'completed');
    assert.deepEqual(final.counts, { queued: 0, running: 0, completed: 1, failed: 0 });
    assert.ok(progress.includes('running') || progress.includes('queued'), progress.join());
  });

  it('runs the example script (examples/client/ask-weather.ts) to the answer', async () => {
    const r = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, [join(__dirname, '../../examples/client/ask-weather.js'), 'Weather in Bergen?'], { env: { ...process.env, TROUPE_BASE_URL: h.baseUrl, TROUPE_API_KEY: h.apiKey } });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      child.on('exit', (code) => (clearTimeout(timer), resolve({ code, out })));
    });
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /get_forecast\(\{"city":"Oslo","country":"NO"\}\) -> answering/);
    assert.match(r.out, /assistant: Oslo today: a high of 17 °C \(62\.6 °F\), sunny spells\./);
  });

  it('verifies webhook signatures with the server’s own scheme', () => {
    const body = '{"id":"ses_1:msg_1:call_1"}';
    const ts = String(Math.floor(Date.now() / 1000));
    const headers = { [WEBHOOK_HEADERS.id]: 'ses_1:msg_1:call_1', [WEBHOOK_HEADERS.timestamp]: ts, [WEBHOOK_HEADERS.signature]: signatureHeader(['whsec_x'], ts, body) };
    assert.equal(verifyWebhook({ secret: 'whsec_x', headers, rawBody: body }).id, 'ses_1:msg_1:call_1');
    assert.throws(() => verifyWebhook({ secret: 'whsec_y', headers, rawBody: body }));
  });
});
