import assert from 'node:assert/strict';
import { endedMessageId, type EventEnvelope } from '../../src/domain/ledger.js';
import { SessionStream, parseLastEventId, type LiveEnvelope } from '../../src/edge/api/sse/session-stream.js';
import { decodeSessionEvents, encodeSessionEvents, SESSION_DELETED } from '../../src/lib/pubsub/session-events.js';
import { toEventDoc, type EventDoc } from '../../src/store/ledger.js';

/** The ledger as the stream reads it: events by sequence, from memory. */
function ledgerOf(count: number): { docs: EventDoc[]; after(sessionId: string, after: number, limit: number): Promise<EventDoc[]> } {
  const docs = Array.from({ length: count }, (_, i) => toEventDoc('o', 's', i + 1, { type: 'session.status_changed', message_id: null, source: 'platform', actor: { type: 'system', id: null }, data: { from: 'idle', to: i % 2 ? 'idle' : 'running' } }, new Date(0), {}));
  return { docs, after: async (_s, after, limit) => docs.filter((d) => d.sequence_number > after).slice(0, limit) };
}

function ids(text: string): number[] {
  return [...text.matchAll(/^id: s:(\d+)$/gm)].map((m) => Number(m[1]));
}

async function drain(stream: SessionStream): Promise<string> {
  await new Promise((r) => setTimeout(r, 30));
  stream.close();
  let text = '';
  for await (const chunk of stream.out) text += chunk.toString();
  return text;
}

const env = (doc: EventDoc): EventEnvelope => ({ id: doc._id, session_id: 's', sequence_number: doc.sequence_number, message_id: null, type: doc.type, source: doc.source, actor: doc.actor, data: JSON.parse(doc.data_json), created_at: doc.created_at.toISOString() });

const live = (doc: EventDoc): LiveEnvelope => ({ ev: env(doc), json: JSON.stringify(env(doc)) });

describe('endedMessageId', () => {
  const change = (to: string, message_id: string | null = 'm1') => ({ type: 'message.status_changed', message_id, data: { from: 'running', to } });
  it('names the message a terminal status change ends, and nothing else', () => {
    for (const to of ['completed', 'failed', 'cancelled']) assert.equal(endedMessageId(change(to)), 'm1');
    for (const to of ['queued', 'running', 'requires_action']) assert.equal(endedMessageId(change(to)), null);
    assert.equal(endedMessageId(change('completed', null)), null);
    assert.equal(endedMessageId({ type: 'session.status_changed', message_id: 'm1', data: { to: 'completed' } }), null);
  });
});

describe('session events on pub/sub', () => {
  it('carries a turn in one message and gives back each envelope and its JSON, newlines in content included', () => {
    const turn = ledgerOf(2).docs.map(env);
    turn[1] = { ...turn[1], type: 'user.message', data: { content: [{ type: 'text', text: 'two\nlines' }], metadata: null, message_id: 'm1' } };
    const raw = encodeSessionEvents(turn);
    const decoded = decodeSessionEvents(raw);
    assert.deepEqual(decoded.map((d) => d.ev), turn);
    assert.deepEqual(decoded.map((d) => d.json), turn.map((e) => JSON.stringify(e)));
    assert.equal(decodeSessionEvents(raw), decoded, 'the listeners of one message share one parse');
    assert.deepEqual(decodeSessionEvents(encodeSessionEvents([{ type: SESSION_DELETED, session_id: 's' }])).map((d) => d.ev), [{ type: SESSION_DELETED, session_id: 's' }]);
  });
});

describe('SessionStream', () => {
  it('backfills after the cursor, then repairs a gap in the live feed and drops duplicates', async () => {
    const ledger = ledgerOf(3);
    const stream = new SessionStream(ledger, 's', 1);
    await stream.start();
    ledger.docs.push(...ledgerOf(8).docs.slice(3));
    // Live feed in two turns: 3 again (duplicate), then 7 (4-6 were missed), then 8; then 8 again.
    stream.onLive([3, 7, 8].map((n) => live(ledger.docs[n - 1])));
    stream.onLive([live(ledger.docs[7])]);
    const text = await drain(stream);
    assert.deepEqual(ids(text), [2, 3, 4, 5, 6, 7, 8]);
    assert.match(text, /^event: session\.status_changed$/m);
  });

  it('writes one live turn in one chunk, its data the JSON as published', async () => {
    const ledger = ledgerOf(0);
    const stream = new SessionStream(ledger, 's', 0);
    await stream.start();
    const chunks: string[] = [];
    stream.out.on('data', (c: Buffer) => chunks.push(c.toString()));
    const turn = ledgerOf(3).docs.map(env);
    const published = encodeSessionEvents(turn);
    stream.onLive(decodeSessionEvents(published) as LiveEnvelope[]);
    await new Promise((r) => setTimeout(r, 10));
    const records = chunks.filter((c) => c.startsWith('id: '));
    assert.equal(records.length, 1, `one write for the turn: ${JSON.stringify(chunks)}`);
    assert.deepEqual(ids(records[0]), [1, 2, 3]);
    assert.deepEqual([...records[0].matchAll(/^data: (.*)$/gm)].map((m) => m[1]), published.split('\n'));
    stream.close();
  });

  it('marks its opening backfill as opening and a catch-up not (ledger-reads.ts starts only the former at once)', async () => {
    const ledger = ledgerOf(3);
    const asked: boolean[] = [];
    const stream = new SessionStream({ after: (s, after, limit, opening = false) => (asked.push(opening), ledger.after(s, after, limit)) }, 's', 0);
    await stream.start();
    ledger.docs.push(...ledgerOf(5).docs.slice(3));
    stream.catchUp();
    await new Promise((r) => setTimeout(r, 10));
    const text = await drain(stream);
    assert.deepEqual(ids(text), [1, 2, 3, 4, 5]);
    assert.deepEqual(asked, [true, false]);
  });

  it('reads what an interrupted live feed missed from the ledger, with no more live events to show the hole', async () => {
    const ledger = ledgerOf(2);
    const stream = new SessionStream(ledger, 's', 0);
    await stream.start();
    stream.onLive([live(ledger.docs[1])]);
    // Appended while the subscriber was away: published, never received; the session then went still.
    ledger.docs.push(...ledgerOf(5).docs.slice(2));
    let text = '';
    stream.out.on('data', (c: Buffer) => (text += c.toString()));
    await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(ids(text), [1, 2], 'nothing live shows the hole: the stream stands still');
    stream.catchUp();
    // A live event the resubscribed feed brings meanwhile: neither twice nor out of order.
    stream.onLive([live(ledger.docs[4])]);
    await new Promise((r) => setTimeout(r, 10));
    stream.close();
    assert.deepEqual(ids(text), [1, 2, 3, 4, 5]);
  });

  it('reads the ledger again when the live feed was interrupted during the backfill', async () => {
    const docs = ledgerOf(6).docs;
    let visible = 2;
    let reads = 0;
    const ledger = {
      after: async (_s: string, after: number, limit: number) => {
        // The first read sees the ledger as it was; the feed drops and comes back while it is under way.
        if (reads++ === 0) stream.catchUp();
        const page = docs.slice(0, visible).filter((d) => d.sequence_number > after).slice(0, limit);
        visible = docs.length;
        return page;
      },
    };
    const stream: SessionStream = new SessionStream(ledger, 's', 0);
    await stream.start();
    assert.deepEqual(ids(await drain(stream)), [1, 2, 3, 4, 5, 6]);
    assert.equal(reads, 2);
  });

  it('holds back for a client that does not read: the backfill waits, deltas are dropped, and a stall ends it', async () => {
    const ledger = ledgerOf(3000);
    let stalls = 0;
    const stream = new SessionStream(ledger, 's', 0, { stallMs: 200, onStall: () => (stalls++, stream.drain(1000, 'client too far behind')) });
    const started = stream.start();
    await new Promise((r) => setTimeout(r, 50));
    for (let i = 0; i < 1000; i++) stream.sendEphemeral('assistant.delta', JSON.stringify({ text: 'x'.repeat(1000) }));
    // Nobody reads `out`: what it holds stays near one write piece (64 KiB) and its own high-water mark.
    assert.ok(stream.backlogBytes < 256 * 1024, `holds ${stream.backlogBytes} bytes`);
    await started;
    assert.equal(stalls, 1);
    let text = '';
    for await (const chunk of stream.out) text += chunk.toString();
    const got = ids(text);
    assert.ok(got.length > 0 && got.length < 3000, `sent ${got.length} of 3000 before the stall`);
    assert.deepEqual(got, got.map((_, i) => i + 1), 'in order, from the first');
    assert.doesNotMatch(text, /assistant\.delta/);
    assert.match(text, /retry: 1000\n: client too far behind/);
  });

  it('sends heartbeat comments while idle', async () => {
    const stream = new SessionStream(ledgerOf(0), 's', 0, { heartbeatMs: 5 });
    await stream.start();
    const text = await drain(stream);
    assert.ok((text.match(/: heartbeat/g) ?? []).length >= 2, text);
  });

  it('parses Last-Event-ID of this session only', () => {
    assert.equal(parseLastEventId('s:12', 's'), 12);
    assert.equal(parseLastEventId('12', 's'), 12);
    assert.equal(parseLastEventId(undefined, 's'), 0);
    assert.equal(parseLastEventId('other:3', 's'), null);
    assert.equal(parseLastEventId('s:x', 's'), null);
  });
});
