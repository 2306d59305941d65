import assert from 'node:assert/strict';
import { StreamLedgerReads } from '../../src/edge/api/sse/ledger-reads.js';
import { toEventDoc, type EventDoc } from '../../src/store/ledger.js';

/**
 * A ledger in memory whose reads finish when the test says: what is read,
 * how many run at once, and what each returns (the ledger as it is when the
 * read starts, as a store's read sees it).
 */
function heldLedger() {
  const docs = new Map<string, EventDoc[]>();
  const started: { sessionId: string; after: number }[] = [];
  const holds: (() => void)[] = [];
  let running = 0;
  let most = 0;
  return {
    started,
    get most() {
      return most;
    },
    append(sessionId: string, n: number) {
      const list = docs.get(sessionId) ?? [];
      for (let i = 0; i < n; i++) list.push(toEventDoc('o', sessionId, list.length + 1, { type: 'session.status_changed', message_id: null, source: 'platform', actor: { type: 'system', id: null }, data: { from: 'idle', to: 'idle' } }, new Date(0), {}));
      docs.set(sessionId, list);
    },
    release() {
      for (const h of holds.splice(0)) h();
    },
    async after(sessionId: string, after: number, limit: number): Promise<EventDoc[]> {
      started.push({ sessionId, after });
      const seen = (docs.get(sessionId) ?? []).filter((d) => d.sequence_number > after).slice(0, limit);
      running++;
      most = Math.max(most, running);
      await new Promise<void>((r) => holds.push(r));
      running--;
      return seen;
    },
  };
}

const turn = () => new Promise((r) => setImmediate(r));
const seqs = (docs: EventDoc[]) => docs.map((d) => d.sequence_number);

describe('StreamLedgerReads', () => {
  it('runs at most its limit of reads at once, the rest in the order asked', async () => {
    const ledger = heldLedger();
    for (let s = 0; s < 20; s++) ledger.append(`s${s}`, 2);
    const reads = new StreamLedgerReads(ledger, 3);
    const all = Array.from({ length: 20 }, (_, s) => reads.after(`s${s}`, 0, 500));
    await turn();
    assert.equal(ledger.started.length, 3);
    for (let i = 0; i < 20; i++) {
      ledger.release();
      await turn();
    }
    const results = await Promise.all(all);
    assert.equal(ledger.most, 3, 'never more than the limit in flight');
    assert.deepEqual(ledger.started.map((r) => r.sessionId), Array.from({ length: 20 }, (_, s) => `s${s}`));
    for (const r of results) assert.deepEqual(seqs(r), [1, 2]);
  });

  it('makes one read of the requests for one session and sequence that wait together, and gives each the result', async () => {
    const ledger = heldLedger();
    ledger.append('a', 3);
    ledger.append('b', 3);
    const reads = new StreamLedgerReads(ledger, 8);
    // What a reconnect does: 50 streams of `a` and 50 of `b` ask in one turn; two of `a` are further behind.
    const asked = [...Array.from({ length: 50 }, () => reads.after('a', 1, 500)), ...Array.from({ length: 50 }, () => reads.after('b', 3, 500)), reads.after('a', 0, 500), reads.after('a', 0, 500)];
    await turn();
    ledger.release();
    const results = await Promise.all(asked);
    assert.deepEqual(ledger.started, [{ sessionId: 'a', after: 1 }, { sessionId: 'b', after: 3 }, { sessionId: 'a', after: 0 }]);
    for (const r of results.slice(0, 50)) assert.deepEqual(seqs(r), [2, 3]);
    for (const r of results.slice(50, 100)) assert.deepEqual(seqs(r), []);
    for (const r of results.slice(100)) assert.deepEqual(seqs(r), [1, 2, 3]);
  });

  it('never joins a read that already started: it may have missed what was appended since', async () => {
    const ledger = heldLedger();
    ledger.append('a', 1);
    const reads = new StreamLedgerReads(ledger, 8);
    const first = reads.after('a', 0, 500);
    await turn();
    assert.equal(ledger.started.length, 1, 'the first read is running');
    // Appended while it runs, then published: a stream told of event 2 asks for it.
    ledger.append('a', 1);
    const second = reads.after('a', 0, 500);
    await turn();
    ledger.release();
    await turn();
    ledger.release();
    assert.deepEqual(seqs(await first), [1]);
    assert.deepEqual(seqs(await second), [1, 2], 'a read of its own, started after it asked');
    assert.equal(ledger.started.length, 2);
  });

  it("starts a new stream's opening read at once when there is room, and keeps the bound when there is none", async () => {
    // Was: an opening read waited a turn of the event loop in the queue even with nothing else there.
    const ledger = heldLedger();
    ledger.append('a', 1);
    const reads = new StreamLedgerReads(ledger, 2);
    const first = reads.after('a', 0, 500, true);
    assert.equal(ledger.started.length, 1, 'started before any turn passed');
    const second = reads.after('b', 0, 500, true);
    const third = reads.after('c', 0, 500, true);
    assert.equal(ledger.started.length, 2, 'the third waits: two are in flight');
    await turn();
    assert.equal(ledger.started.length, 2, 'still at the bound');
    ledger.release();
    await turn();
    assert.deepEqual(ledger.started.map((r) => r.sessionId), ['a', 'b', 'c'], 'the third starts when one finishes');
    ledger.release();
    assert.deepEqual(seqs(await first), [1]);
    assert.deepEqual([seqs(await second), seqs(await third)], [[], []]);
    assert.equal(ledger.most, 2);
  });

  it('queues an opening read behind reads that wait, and lets it share one of them', async () => {
    const ledger = heldLedger();
    ledger.append('a', 2);
    const reads = new StreamLedgerReads(ledger, 8);
    // A burst of catch-ups is waiting for its turn: an opening read of the same session and sequence joins it.
    const burst = [reads.after('a', 1, 500), reads.after('a', 1, 500)];
    const opening = reads.after('a', 1, 500, true);
    assert.equal(ledger.started.length, 0, 'nothing starts before the burst has met');
    await turn();
    ledger.release();
    for (const r of await Promise.all([...burst, opening])) assert.deepEqual(seqs(r), [2]);
    assert.equal(ledger.started.length, 1, 'one read for all three');
  });

  it('hands a failed read\'s error to everyone who shared it, and goes on with the next reads', async () => {
    let calls = 0;
    const reads = new StreamLedgerReads({ after: async () => (calls++ === 0 ? Promise.reject(new Error('store down')) : []) }, 1);
    const shared = [reads.after('a', 0, 500), reads.after('a', 0, 500)];
    const next = reads.after('b', 0, 500);
    for (const p of shared) await assert.rejects(p, /store down/);
    assert.deepEqual(await next, []);
    assert.equal(calls, 2);
  });
});
