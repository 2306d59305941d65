import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { request, type IncomingMessage } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { FakeLlmUpstream, floodPiece } from '../fakes/llm-upstream.js';
import { candidate } from '../fakes/llm-conversation.js';
import { startHarness, type Harness } from '../support/harness.js';
import { until } from '../support/wait.js';

/** 1 KiB text deltas; the whole stream is some 28 MB of SSE, far more than every buffer between the two ends holds. */
const PIECE_BYTES = 1024;
const PIECES = 24_576;
/**
 * What may sit between the model and a client that has stopped reading: the kernel's socket buffers on both
 * hops (send buffers up to 4 MiB here, receive buffers grown by autotuning) and the router's own queue of at
 * most 64 upstream reads. Without the pause the router takes the whole stream into memory.
 */
const IN_FLIGHT_BOUND = 16 * 1024 * 1024;

/** The text of a chat-completions SSE stream, and whether it ended with [DONE] after a finish. */
function readChatStream(raw: string): { text: string; pieces: number; finish: unknown; done: boolean } {
  let text = '';
  let pieces = 0;
  let finish: unknown = null;
  let done = false;
  for (const frame of raw.split('\n\n')) {
    const data = frame.startsWith('data: ') ? frame.slice(6) : null;
    if (data === null) continue;
    if (data === '[DONE]') {
      done = true;
      continue;
    }
    const choice = (JSON.parse(data) as { choices: { delta?: { content?: string }; finish_reason?: unknown }[] }).choices[0];
    if (choice?.delta?.content) {
      text += choice.delta.content;
      pieces++;
    }
    if (choice?.finish_reason) finish = choice.finish_reason;
  }
  return { text, pieces, finish, done };
}

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * Buffer memory of this process after a full collection. The router, the fake model and the client all run in
 * the test's process; the fake waits for its socket to drain and the paused client reads nothing, so what this
 * grows by while the stream is held is the router's share (kernel socket buffers are not in it).
 */
function bufferMemory(): number {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  return process.memoryUsage().arrayBuffers;
}

/**
 * The least of a few readings 100 ms apart. The harness's other clients (MongoDB, Redis, BullMQ) share the process
 * and now and then hold a reply's buffer for a moment (2 MB once, in a CI run); what the router holds for a
 * stalled stream stays put, so it is in every reading and the least one still shows it.
 */
async function steadyBufferMemory(): Promise<number> {
  let least = Infinity;
  for (let i = 0; i < 3; i++) {
    if (i) await new Promise((r) => setTimeout(r, 100));
    least = Math.min(least, bufferMemory());
  }
  return least;
}

/** What the router may hold for one stream whose client has stopped reading: its queue's high-water mark and a socket read or two. */
const ROUTER_HELD_BOUND = 2 * 1024 * 1024;

describe('routing interface: a stream faster than its reader', function () {
  this.timeout(60_000);
  let h: Harness;
  let fake: FakeLlmUpstream;

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ roles: ['web', 'router'] });
    assert.equal((await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-fake-flood' } })).status, 200);
    assert.equal((await h.api('/v1/routers/flood', { method: 'PUT', json: { candidates: [candidate(fake, 'openai', 'openai/m')] } })).status, 200);
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });

  it('holds the model back while the client does not read, then delivers the whole stream intact', async () => {
    fake.flood = { pieces: PIECES, pieceBytes: PIECE_BYTES };
    const memoryBefore = await steadyBufferMemory();
    const req = request(`${h.routerUrl}/flood/chat/completions`, {
      method: 'POST',
      agent: false,
      headers: { authorization: `Bearer ${h.routingKey}`, 'content-type': 'application/json' },
    });
    req.end(JSON.stringify({ model: 'service/routing', messages: [{ role: 'user', content: 'Flood me.' }], stream: true }));
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    assert.equal(res.statusCode, 200);
    const parts: Buffer[] = [];
    let read = 0;
    res.on('data', (c: Buffer) => {
      parts.push(c);
      read += c.length;
    });
    // Take the first bytes, then stop reading, as a slow client does.
    await once(res, 'data');
    res.pause();

    try {
      // The fake writes as fast as its connection takes bytes; it must come to wait on a full connection
      // and stay there (nothing written for a second) while every buffer on the way is full.
      let last = -1;
      let since = Date.now();
      await until(async () => {
        const seen = fake.flooded;
        if (seen !== last) [last, since] = [seen, Date.now()];
        return fake.floodBlocked && Date.now() - since >= 1000;
      }, 30_000);
      const writtenAtStall = fake.flooded;
      const inFlight = writtenAtStall - read;
      const held = (await steadyBufferMemory()) - memoryBefore;
      assert.ok(held < ROUTER_HELD_BOUND, `the router holds ${held} bytes of a stream its client does not read`);
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(fake.flooded, writtenAtStall, 'the model stays held back while the client does not read');
      assert.ok(inFlight < IN_FLIGHT_BOUND, `${inFlight} bytes between the model and the client while the client did not read`);
      const total = PIECES * (PIECE_BYTES + 120);
      assert.ok(writtenAtStall < total / 2, `the model had written ${writtenAtStall} of some ${total} bytes when it was held back`);
      console.log(`      held back after ${(writtenAtStall / 1048576).toFixed(1)} MiB; ${(inFlight / 1048576).toFixed(1)} MiB in flight, ${(held / 1048576).toFixed(2)} MiB of it in buffers of this process`);
      res.resume();
      await once(res, 'end');
    } finally {
      res.destroy();
    }
    const out = readChatStream(Buffer.concat(parts).toString('utf8'));
    assert.equal(out.pieces > 0, true);
    const expected = Array.from({ length: PIECES }, (_, i) => floodPiece(i, PIECE_BYTES)).join('');
    assert.equal(out.text.length, expected.length, 'every byte of text arrived');
    assert.equal(sha(out.text), sha(expected), 'the text arrived in order, unchanged');
    assert.equal(out.finish, 'stop');
    assert.equal(out.done, true);
    assert.equal(fake.closedEarly, 0);
  });
});
