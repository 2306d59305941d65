import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { toEventDoc } from '../../src/store/ledger.js';
import { scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { SseClient } from '../support/sse.js';
import { until } from '../support/wait.js';

/** A session ledger far larger than every buffer between the server and a client that does not read. */
const EVENTS = 3000;
const TEXT_BYTES = 2000;
/** What the web process may hold for one stream whose client reads nothing: a write piece, the stream's and socket's buffers. */
const HELD_BOUND = 1024 * 1024;
const STALL_MS = 1000;
const PER_KEY = 3;

/** Buffer memory of this process after a full collection (the web runs in the test's process; kernel buffers are not in it). */
function bufferMemory(): number {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  return process.memoryUsage().arrayBuffers;
}

async function steadyBufferMemory(): Promise<number> {
  let least = Infinity;
  for (let i = 0; i < 3; i++) {
    if (i) await new Promise((r) => setTimeout(r, 100));
    least = Math.min(least, bufferMemory());
  }
  return least;
}

/** The event ids of the complete SSE records in a raw HTTP/1.0 answer (no chunked framing), in order. */
function recordIds(raw: string): number[] {
  const body = raw.slice(raw.indexOf('\r\n\r\n') + 4);
  const complete = body.slice(0, body.lastIndexOf('\n\n') + 2);
  return [...complete.matchAll(/^id: [^:\n]+:(\d+)$/gm)].map((m) => Number(m[1]));
}

describe('session streams and slow clients', function () {
  this.timeout(60_000);
  let h: Harness;
  let sid = '';
  let first = 0;
  const sockets: Socket[] = [];
  const clients: SseClient[] = [];

  before(async () => {
    h = await startHarness({ roles: ['web'], env: { TROUPE_SSE_STALL_MS: String(STALL_MS), TROUPE_SSE_MAX_STREAMS_PER_KEY: String(PER_KEY) } });
    const { agentId } = await scriptedAgent(h, [{ text: 'done' }]);
    const res = await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: {} });
    assert.equal(res.status, 201);
    sid = ((await res.json()) as { id: string }).id;
    // The ledger written straight into the store: what a long, busy session leaves for a new stream to backfill.
    const ledger = h.running.core.stores.ledger;
    const org = (await h.running.core.stores.orgs.byName('default'))!;
    const session = (await h.running.core.stores.sessions.get(org._id, sid))!;
    first = session.last_sequence + 1;
    const text = 'w'.repeat(TEXT_BYTES);
    for (let at = 0; at < EVENTS; at += 1000) {
      const docs = Array.from({ length: Math.min(1000, EVENTS - at) }, (_, i) =>
        toEventDoc(session.org_id, sid, first + at + i, { type: 'user.message', message_id: null, source: 'user', actor: { type: 'user', id: null }, data: { content: [{ type: 'text', text }], metadata: null, message_id: `m${at + i}` } }, new Date(), {}),
      );
      await ledger.append(docs);
    }
  });
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });
  after(async () => {
    await h?.close();
  });

  /** A client that asks for the stream and reads nothing: a raw socket paused before the answer. */
  async function stalledClient(): Promise<{ socket: Socket; received: () => string }> {
    const { port } = new URL(h.baseUrl);
    const socket = connect(Number(port), '127.0.0.1');
    sockets.push(socket);
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const parts: Buffer[] = [];
    socket.on('data', (c: Buffer) => parts.push(c));
    socket.pause();
    socket.write(`GET /v1/sessions/${sid}/stream HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${h.apiKey}\r\nAccept: text/event-stream\r\n\r\n`);
    return { socket, received: () => Buffer.concat(parts).toString('utf8') };
  }

  it('holds a client that does not read to a bounded buffer, ends it, and a resume gets every event once', async () => {
    const before = await steadyBufferMemory();
    const stalledBefore = await h.running.core.metrics.sseStalled.get();
    const client = await stalledClient();
    // The backfill runs until the client's window and the server's buffers are full, then waits on the client
    // (without the wait it reads on to the ledger's end, every page into memory); past the stall time the stream
    // is ended (a paused socket sees no end until it reads).
    const stalled = async () => (await h.running.core.metrics.sseStalled.get()).values[0]?.value ?? 0;
    const was = stalledBefore.values[0]?.value ?? 0;
    const ended = await until(async () => (await stalled()) === was + 1, 20_000).catch(() => false);
    const held = (await steadyBufferMemory()) - before;
    assert.ok(held < HELD_BOUND, `the web holds ${held} bytes for a stream whose client reads nothing (ledger: ${EVENTS * TEXT_BYTES} bytes)`);
    assert.ok(ended, 'the stalled stream was ended');
    // What reached the client before the cut, then a resume from its last complete record: every event, once, in order.
    client.socket.resume();
    // The end comes with a retry: hint (the socket itself stays open until the server lets it go: keep-alive).
    await until(async () => client.received().includes('retry: 5000\n'), 10_000);
    const got = recordIds(client.received());
    assert.ok(got.length > 0 && got.length < EVENTS, `the stalled client got ${got.length} records before the cut`);
    const resumed = new SseClient(`${h.baseUrl}/v1/sessions/${sid}/stream`, { Authorization: `Bearer ${h.apiKey}`, 'Last-Event-ID': `${sid}:${got[got.length - 1]}` });
    clients.push(resumed);
    await resumed.open();
    const last = first + EVENTS - 1;
    await resumed.waitFor((r) => r.length > 0 && r[r.length - 1].id === `${sid}:${last}`, 30_000);
    const all = [...got, ...resumed.records.map((r) => Number(r.id.split(':')[1]))];
    assert.deepEqual(all, Array.from({ length: last }, (_, i) => i + 1), 'gapless, no duplicates');
  });

  it('caps open streams per key: 429 with Retry-After, and a closed stream frees its slot', async () => {
    for (let i = 0; i < PER_KEY; i++) {
      const c = new SseClient(`${h.baseUrl}/v1/sessions/${sid}/stream?last_event_id=${sid}:${first + EVENTS - 1}`, { Authorization: `Bearer ${h.apiKey}` });
      clients.push(c);
      await c.open();
      assert.equal(c.status, 200);
    }
    const refused = await h.api(`/v1/sessions/${sid}/stream`);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '5');
    const body = (await refused.json()) as { error: { type: string; code: string; message: string } };
    assert.equal(body.error.code, 'concurrency_limited');
    assert.match(body.error.message, /TROUPE_SSE_MAX_STREAMS_PER_KEY/);
    const refusals = (await h.running.core.metrics.rateLimitRefusals.get()).values.find((v) => v.labels.surface === 'streams' && v.labels.scope === 'key');
    assert.equal(refusals?.value, 1, 'counted in troupe_rate_limit_refusals_total');
    await clients.pop()!.close();
    const again = await until(async () => {
      const c = new SseClient(`${h.baseUrl}/v1/sessions/${sid}/stream?last_event_id=${sid}:${first + EVENTS - 1}`, { Authorization: `Bearer ${h.apiKey}` });
      await c.open();
      if (c.status === 200) return c;
      await c.close();
      return null;
    }, 5000);
    clients.push(again);
  });
});
