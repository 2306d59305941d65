import assert from 'node:assert/strict';
import { parseRedisTarget } from '../../src/lib/redis/target.js';
import { WebhookReceiver } from '../fakes/webhook-receiver.js';
import { scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { freePort } from '../../infra/services/process.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';
import { SseClient, type SseRecord } from '../support/sse.js';
import { json } from '../support/wait.js';

type LedgerEvent = { id: string; sequence_number: number; type: string; message_id: string | null; data: { to?: string } };

const SEQUENTIAL_SESSIONS = 6;
const MESSAGES_EACH = 3;
const BURST_SESSIONS = 1;
const BURST_MESSAGES = 4;
const HOPPING_READERS = 2;
const ROLES = ['web', 'web', 'worker', 'worker', 'worker', 'webhooks'];

/** The cluster leg runs it; TROUPE_TEST_MULTI_PROCESS=1 runs it on one redis-server too (for comparison). */
function wanted(): boolean {
  if (process.env.TROUPE_TEST_MULTI_PROCESS === '1') return true;
  try {
    return parseRedisTarget(process.env.REDIS_URL ?? '', process.env.REDIS_CLUSTER === '1').cluster;
  } catch {
    return false;
  }
}

/**
 * The Procfile's roles as separate OS processes on a Redis Cluster: 2 web,
 * 3 worker, 1 webhooks. Clients talk to both web processes at random; the
 * session actors may run on any worker. Runs in the cluster leg of `npm test`.
 */
describe('many processes on a Redis Cluster: 2 web, 3 worker, 1 webhooks', function () {
  this.timeout(360_000);
  let h: Harness;
  let rx: WebhookReceiver;
  const procs: RoleProcess[] = [];
  let webs: string[] = [];
  let agentId = '';
  const auth = () => ({ Authorization: `Bearer ${h.apiKey}` });

  before(async function () {
    if (!wanted()) return this.skip(); // the single-Redis leg has the in-process suite; this one needs the cluster
    // Only the test's own store access in-process; every role runs in a child process.
    h = await startHarness({ roles: [], env: { TROUPE_WEBHOOKS_ALLOW_PRIVATE: '1', TROUPE_SESSION_SHARDS: '16', LOG_LEVEL: 'warn' } });
    rx = await WebhookReceiver.start();
    ({ agentId } = await scriptedAgent(h, [{ text: 'done' }]));
    // The readiness lines ("web listening", "worker started") are info-level.
    const env = { ...h.env, LOG_LEVEL: 'info' };
    const started = await Promise.all(
      ROLES.map(async (role) => {
        const port = role === 'web' ? String(await freePort()) : '0';
        return startRoleProcess([role], { ...env, PORT: port, TROUPE_PUBLIC_URL: `http://127.0.0.1:${port}` }, { readyMs: 60_000 });
      }),
    );
    procs.push(...started);
    webs = started.filter((p) => p.ports.web).map((p) => `http://127.0.0.1:${p.ports.web}`);
    await json(await fetch(`${webs[0]}/v1/agents/${agentId}/webhook`, { method: 'PUT', headers: { ...auth(), 'Content-Type': 'application/json' }, body: JSON.stringify({ webhook_url: `${rx.url}/hook`, event_types: ['session.completed'] }) }), 200);
  });
  afterEach(function () {
    // A failure here is hard to read from the client side alone: show what the processes said.
    if (this.currentTest?.state !== 'failed') return;
    for (const [i, p] of procs.entries()) console.log(`--- ${ROLES[i]} (pid ${p.child.pid}):\n${p.lines.filter((l) => !l.includes('"msg":"request"') || l.includes('"level":"error"') || l.includes('"level":50')).slice(-30).join('\n')}`);
  });
  after(async () => {
    for (const p of procs) p.kill('SIGTERM');
    await Promise.all(procs.map((p) => Promise.race([p.exited, new Promise((r) => setTimeout(r, 10_000))])));
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.kill('SIGKILL');
    await rx?.close();
    await h?.close();
  });

  const post = (web: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(web + path, { method: 'POST', headers: { ...auth(), ...(body ? { 'Content-Type': 'application/json' } : {}), ...headers }, body: body ? JSON.stringify(body) : undefined });

  /**
   * Sends a user message. A 503 (the actor did not answer in time) or a 409 (the first try is still in
   * flight) is retried with the same Idempotency-Key, as a client would; the retries must not duplicate it.
   */
  async function send(web: string, sessionId: string, key: string): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      const res = await post(web, `/v1/sessions/${sessionId}/events`, { type: 'user.message', content: [{ type: 'text', text: key }] }, { 'Idempotency-Key': key });
      if ((res.status === 503 || res.status === 409) && attempt < 10) {
        await res.body?.cancel();
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      return (await json<{ message: { id: string } }>(res, 201)).message.id;
    }
  }

  async function ledger(sessionId: string): Promise<LedgerEvent[]> {
    return (await json<{ events: LedgerEvent[] }>(await fetch(`${webs[1]}/v1/sessions/${sessionId}/events?limit=100`, { headers: auth() }), 200)).events;
  }

  /** The session's ledger once every one of its messages is completed and the session idle again. */
  let settleBy = 0;
  async function settled(sessionId: string, messages: number): Promise<LedgerEvent[]> {
    const deadline = settleBy;
    for (;;) {
      const events = await ledger(sessionId);
      const done = events.filter((e) => e.type === 'message.status_changed' && e.data.to === 'completed').length;
      if (done === messages && events.at(-1)?.type === 'session.status_changed' && events.at(-1)?.data.to === 'idle') return events;
      assert.ok(Date.now() < deadline, `session ${sessionId} did not settle: ${events.map((e) => e.type + (e.data.to ? '>' + e.data.to : '')).join(', ')}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** Reads a session's stream hopping between web processes, resuming with Last-Event-ID, until `stop()`. */
  function hoppingReader(sessionId: string): { seen: SseRecord[]; hops: () => number; stop: () => Promise<void> } {
    const seen: SseRecord[] = [];
    let hops = 0;
    let stopping = false;
    const run = (async () => {
      for (let i = 0; i < 1000 && !stopping; i++) {
        const last = seen.at(-1)?.id;
        const client = new SseClient(`${webs[i % webs.length]}/v1/sessions/${sessionId}/stream`, { ...auth(), ...(last ? { 'Last-Event-ID': last } : {}) });
        await client.open();
        assert.equal(client.status, 200);
        // Hop once this connection delivered something (or after 3 s), a little later than the first record,
        // so the reader leaves mid-stream as often as between events.
        const until = Date.now() + 3000;
        while (!client.records.length && Date.now() < until && !stopping) await new Promise((r) => setTimeout(r, 20));
        await new Promise((r) => setTimeout(r, Math.random() * 200));
        await client.close();
        seen.push(...client.records);
        hops++;
      }
    })();
    return {
      seen,
      hops: () => hops,
      stop: async () => {
        stopping = true;
        await run;
      },
    };
  }

  it('keeps every ledger gapless and in order, streams each event once across hops, and delivers each webhook once', async () => {
    const t0 = Date.now();
    const create = async (i: number) => (await json<{ id: string }>(await post(webs[i % 2], `/v1/agents/${agentId}/sessions`), 201)).id;
    const sequential = await Promise.all(Array.from({ length: SEQUENTIAL_SESSIONS }, (_, i) => create(i)));
    const burst = await Promise.all(Array.from({ length: BURST_SESSIONS }, (_, i) => create(i)));
    const readers = sequential.slice(0, HOPPING_READERS).map((sid) => ({ sid, reader: hoppingReader(sid) }));

    // Sessions in parallel; within a session one message after another, each through the other web process.
    const sentInOrder = await Promise.all(
      sequential.map(async (sid, s) => {
        const ids: string[] = [];
        for (let m = 0; m < MESSAGES_EACH; m++) ids.push(await send(webs[(s + m) % 2], sid, `${sid}-m${m}`));
        return ids;
      }),
    );
    // And concurrent messages to one session through both web processes at once.
    const burstIds = await Promise.all(burst.map((sid) => Promise.all(Array.from({ length: BURST_MESSAGES }, (_, m) => send(webs[m % 2], sid, `${sid}-b${m}`)))));

    console.log(`      ${SEQUENTIAL_SESSIONS * MESSAGES_EACH + BURST_SESSIONS * BURST_MESSAGES} messages accepted in ${Date.now() - t0} ms`);
    settleBy = Date.now() + 90_000;
    const expectedWebhooks = new Set<string>();
    for (const [s, sid] of sequential.entries()) {
      const events = await settled(sid, MESSAGES_EACH);
      assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i + 1), `gapless ledger for ${sid}`);
      assert.deepEqual(events.filter((e) => e.type === 'user.message').map((e) => e.message_id), sentInOrder[s], `messages of ${sid} in the order sent`);
      for (const mid of sentInOrder[s]) {
        const mine = events.filter((e) => e.message_id === mid).map((e) => e.type + (e.data.to ? `>${e.data.to}` : ''));
        assert.equal(mine[0], 'user.message', `${mid} starts with its user.message`);
        assert.equal(mine.filter((t) => t === 'message.status_changed>completed').length, 1, `${mid} completes once: ${mine.join(', ')}`);
        assert.equal(mine.at(-1), 'message.status_changed>completed');
        expectedWebhooks.add(`${sid}:${mid}:session.completed`);
      }
    }
    for (const [b, sid] of burst.entries()) {
      const events = await settled(sid, BURST_MESSAGES);
      assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i + 1), `gapless ledger for ${sid}`);
      const users = events.filter((e) => e.type === 'user.message').map((e) => e.message_id);
      assert.deepEqual([...users].sort(), [...burstIds[b]].sort(), `each concurrent message of ${sid} recorded once`);
      // One message runs at a time, in the order the ledger accepted them.
      const starts = events.filter((e) => e.type === 'message.status_changed' && e.data.to === 'running').map((e) => e.message_id);
      assert.deepEqual(starts, users, `${sid} runs its messages in ledger order`);
      for (const mid of users) expectedWebhooks.add(`${sid}:${mid}:session.completed`);
    }

    const readBy = Date.now() + 30_000;
    for (const { sid, reader } of readers) {
      const events = await ledger(sid);
      const deadline = readBy;
      // At least 3 connections, also when the first two delivered everything: the later ones resume at the end
      // and must add nothing.
      while ((reader.seen.length < events.length || reader.hops() < 3) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      await reader.stop();
      assert.ok(reader.hops() >= 3, `the reader of ${sid} hopped between web processes (${reader.hops()} connections)`);
      assert.deepEqual(reader.seen.map((r) => r.id), events.map((e) => e.id), `the hopping reader of ${sid} saw every event once, in order`);
    }

    console.log(`      ledgers settled and streams read in ${Date.now() - t0} ms`);
    const got = await rx.waitFor(expectedWebhooks.size, '/hook', 60_000);
    // Any duplicate would come from a second worker or a redelivery; give it a moment to show.
    await new Promise((r) => setTimeout(r, 1500));
    const ids = rx.received.filter((r) => r.path === '/hook').map((r) => String(r.headers['service-webhook-id']));
    assert.equal(ids.length, new Set(ids).size, `no webhook delivered twice: ${ids.length} deliveries of ${new Set(ids).size} ids`);
    assert.deepEqual(new Set(ids), expectedWebhooks);
    assert.ok(got.length >= expectedWebhooks.size);
  });
});
