import assert from 'node:assert/strict';
import type { EventEnvelope } from '../../src/domain/ledger.js';
import { SessionStream, parseLastEventId } from '../../src/http/sse/session-stream.js';
import { toEventDoc, type EventDoc } from '../../src/store/ledger.js';

/** The ledger as the stream reads it: events by sequence, from memory. */
function ledgerOf(count: number): { docs: EventDoc[]; after(sessionId: string, after: number, limit: number): Promise<EventDoc[]> } {
  const docs = Array.from({ length: count }, (_, i) => toEventDoc('o', 's', i + 1, { type: 'session.status_changed', message_id: null, source: 'platform', actor: { type: 'system', id: null }, data: { n: i + 1 } }, new Date(0), {}));
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

describe('SessionStream', () => {
  it('backfills after the cursor, then repairs a gap in the live feed and drops duplicates', async () => {
    const ledger = ledgerOf(3);
    const stream = new SessionStream(ledger, 's', 1);
    await stream.start();
    ledger.docs.push(...ledgerOf(8).docs.slice(3));
    // Live feed: 3 again (duplicate), then 7 (4-6 were missed), then 8 twice.
    for (const n of [3, 7, 8, 8]) stream.onLive(env(ledger.docs[n - 1]));
    const text = await drain(stream);
    assert.deepEqual(ids(text), [2, 3, 4, 5, 6, 7, 8]);
    assert.match(text, /^event: session\.status_changed$/m);
  });

  it('sends heartbeat comments while idle', async () => {
    const stream = new SessionStream(ledgerOf(0), 's', 0, 5);
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
