import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { MongoClient, MongoServerError, type Db } from 'mongodb';
import { emptySessionState } from '../../src/domain/session/projection.js';
import { SecretBox } from '../../src/lib/crypto/secret-box.js';
import { BatchStore } from '../../src/store/batches.js';
import type { BatchItem } from '../../src/domain/views/batch-item.js';
import { BlobStore } from '../../src/store/blobs.js';
import { CredentialStore } from '../../src/store/credentials.js';
import { ensureIndexes } from '../../src/store/indexes.js';
import { LedgerStore, toEventDoc } from '../../src/store/ledger.js';
import { MessageStore } from '../../src/store/messages.js';
import { ProjectionWriter } from '../../src/store/projection-writer.js';
import { RouterStore } from '../../src/store/routers.js';
import { SessionStore } from '../../src/store/sessions.js';
import { WebhookConfigStore } from '../../src/store/webhook-configs.js';
import { ATTEMPT_LOG_MAX, WebhookDeliveryStore } from '../../src/store/webhook-deliveries.js';
import { requiredEnv, uniqueName } from '../support/harness.js';

/**
 * The MongoDB semantics Troupe relies on, checked against whichever server this
 * leg of the matrix runs (mongo-java-server, FerretDB, or MONGODB_URL). Code
 * that passes here on both implementations behaves the same on MongoDB.
 */
describe('MongoDB semantics Troupe relies on', () => {
  let client: MongoClient;
  let db: Db;
  const kind = process.env.TROUPE_TEST_MONGO_KIND ?? 'external';

  before(async () => {
    client = new MongoClient(requiredEnv('MONGODB_URL'), { directConnection: true });
    await client.connect();
    db = client.db(uniqueName('troupe_sem'));
    await ensureIndexes(db);
  });
  after(async () => {
    await db?.dropDatabase();
    await client?.close();
  });

  const code = async (p: Promise<unknown>): Promise<number | undefined> => {
    try {
      await p;
      return undefined;
    } catch (err) {
      assert.ok(err instanceof MongoServerError, `a server error, got ${String(err)}`);
      return err.code as number;
    }
  };

  it('a unique compound index refuses a duplicate with 11000 on insert, upsert and update', async () => {
    const col = db.collection<{ _id: string; org_id: string; name: string; v?: number }>('credentials');
    await col.insertOne({ _id: 'c1', org_id: 'o1', name: 'KEY' });
    await col.insertOne({ _id: 'c2', org_id: 'o1', name: 'OTHER' });
    await col.insertOne({ _id: 'c3', org_id: 'o2', name: 'KEY' }); // same name, other org: allowed
    assert.equal(await code(col.insertOne({ _id: 'c4', org_id: 'o1', name: 'KEY' })), 11000);
    assert.equal(await code(col.updateOne({ _id: 'c5' }, { $set: { org_id: 'o1', name: 'KEY' } }, { upsert: true })), 11000);
    // Changing an existing document's key into a duplicate is refused everywhere, but FerretDB v1
    // says InternalError (code 1) instead of 11000. Troupe never changes a unique key field of an
    // existing document, so it depends on the refusal only, never on that code.
    const updateCode = kind === 'ferretdb' ? 1 : 11000;
    assert.equal(await code(col.updateOne({ _id: 'c2' }, { $set: { name: 'KEY' } })), updateCode);
    assert.equal(await code(col.findOneAndUpdate({ _id: 'c2' }, { $set: { name: 'KEY' } })), updateCode);
    assert.deepEqual((await col.find({}).sort({ _id: 1 }).toArray()).map((d) => `${d._id}:${d.org_id}:${d.name}`), ['c1:o1:KEY', 'c2:o1:OTHER', 'c3:o2:KEY']);
  });

  it('an unordered insertMany keeps every non-duplicate and reports the duplicates as 11000', async () => {
    const col = db.collection<{ _id: string; session_id: string; sequence_number: number }>('events');
    await col.insertOne({ _id: 'e1', session_id: 's', sequence_number: 1 });
    const docs = [2, 1, 3, 3, 4].map((n, i) => ({ _id: `m${i}`, session_id: 's', sequence_number: n }));
    const err = await col.insertMany(docs, { ordered: false }).then(
      () => null,
      (e: { code?: number; insertedCount?: number; writeErrors?: unknown }) => e,
    );
    assert.ok(err, 'the duplicates fail the call');
    assert.equal(err.code, 11000);
    assert.deepEqual((await col.find({ session_id: 's' }).sort({ sequence_number: 1 }).toArray()).map((d) => d.sequence_number), [1, 2, 3, 4]);
  });

  it('findOneAndUpdate returns the document before or after, and upserts', async () => {
    const col = db.collection<{ _id: string; n: number; tag?: string }>('usage');
    assert.equal(await col.findOneAndUpdate({ _id: 'u' }, { $inc: { n: 1 } }), null);
    const inserted = await col.findOneAndUpdate({ _id: 'u' }, { $inc: { n: 1 }, $setOnInsert: { tag: 'new' } }, { upsert: true, returnDocument: 'after' });
    assert.deepEqual(inserted, { _id: 'u', n: 1, tag: 'new' });
    const before = await col.findOneAndUpdate({ _id: 'u' }, { $inc: { n: 5 } }, { returnDocument: 'before' });
    assert.equal(before?.n, 1);
    assert.equal((await col.findOne({ _id: 'u' }))?.n, 6);
    const conditional = await col.findOneAndUpdate({ _id: 'u', n: 1 }, { $set: { n: 0 } }, { returnDocument: 'after' });
    assert.equal(conditional, null, 'a filter that no longer matches changes nothing');
  });

  it('a second delivery of one event is refused by the unique index and becomes an attempt', async () => {
    const store = new WebhookDeliveryStore(db);
    const d = { org_id: 'o', agent_id: 'agt', event_id: 'evt_1', event_type: 'session.completed', session_id: null, message_id: null, batch_id: null, body: '{}' };
    const attempt = { attempted_at: new Date(), status_code: 500, error: null, duration_ms: 1, redelivery: false };
    const first = await store.insertWithAttempt(d, attempt, { status: 'pending', next_attempt_at: new Date() });
    const second = await store.insertWithAttempt(d, attempt, { status: 'succeeded', next_attempt_at: null });
    assert.equal(second._id, first._id);
    const stored = await store.col.find({ org_id: 'o' }).toArray();
    assert.equal(stored.length, 1);
    assert.equal(stored[0].attempts.length, 2);
    await store.insertWithAttempt({ ...d, event_id: 'evt_2' }, attempt, { status: 'succeeded', next_attempt_at: null });
    assert.equal(await store.col.countDocuments({ org_id: 'o' }), 2);
  });

  it('a delivery keeps the latest attempts only, however often it is redelivered', async () => {
    const store = new WebhookDeliveryStore(db);
    const d = { org_id: 'o_cap', agent_id: 'agt', event_id: 'evt_cap', event_type: 'session.completed', session_id: null, message_id: null, batch_id: null, body: '{}' };
    const attempt = { attempted_at: new Date(), status_code: 500, error: null, duration_ms: 1, redelivery: true };
    const first = await store.insertWithAttempt(d, { ...attempt, redelivery: false }, { status: 'failed', next_attempt_at: null });
    const total = ATTEMPT_LOG_MAX + 25;
    for (let n = 2; n <= total; n++) await store.recordAttempt(first._id, n, attempt, { status: 'failed', next_attempt_at: null });
    const stored = await store.byId(first._id);
    assert.equal(stored?.attempt_count, total);
    assert.equal(stored?.attempts.length, ATTEMPT_LOG_MAX);
    assert.deepEqual([stored?.attempts[0].number, stored?.attempts.at(-1)?.number], [total - ATTEMPT_LOG_MAX + 1, total]);
  });

  it('a unique compound index counts a missing field as null (MongoDB semantics)', async function () {
    // FerretDB v1 accepts both documents; MongoDB and mongo-java-server refuse the second.
    // Troupe never relies on either: every unique key field it indexes is always set.
    if (kind === 'ferretdb') this.skip();
    const col = db.collection<{ _id: string; org_id: string }>('webhook_deliveries');
    await col.insertOne({ _id: 'x1', org_id: 'o_missing' });
    assert.equal(await code(col.insertOne({ _id: 'x2', org_id: 'o_missing' })), 11000);
  });

  it('ensureIndexes from several processes at once, on a fresh database, all succeed', async function () {
    this.timeout(60_000);
    // web and worker processes start together and each creates the collections and indexes.
    const clients = Array.from({ length: 6 }, () => new MongoClient(requiredEnv('MONGODB_URL'), { directConnection: true }));
    const fresh = Array.from({ length: 3 }, () => uniqueName('troupe_sem_race'));
    try {
      await Promise.all(clients.map((c) => c.connect()));
      for (const name of fresh) {
        await Promise.all(clients.map((c) => ensureIndexes(c.db(name))));
        const indexes = (await clients[0].db(name).collection('credentials').listIndexes().toArray()).map((i) => i.name as string);
        assert.ok(indexes.includes('org_name_unique'));
      }
    } finally {
      for (const name of fresh) await clients[0].db(name).dropDatabase().catch(() => undefined);
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  it('first upserts of one credential, router and webhook config from many writers at once all succeed', async function () {
    this.timeout(60_000);
    // Two first writers both miss the document and both insert; the loser's E11000 (on the `_id` that
    // $setOnInsert gives) is not retried by MongoDB itself, and was a 500 for a client's concurrent PUTs.
    const box = new SecretBox(new Map([['k', randomBytes(32)]]), 'k');
    const clients = Array.from({ length: 4 }, () => new MongoClient(requiredEnv('MONGODB_URL')));
    try {
      await Promise.all(clients.map((c) => c.connect()));
      const writers = clients.flatMap((c) => [c, c]).map((c) => c.db(db.databaseName));
      for (let round = 0; round < 10; round++) {
        const name = `RACE_${round}`;
        const results = await Promise.allSettled(
          writers.flatMap((w, i) => [
            new CredentialStore(w, box).put('o_race', name, `v${i}`),
            new RouterStore(w).put('o_race', `r${round}`, { default: false, policy: { kind: 'first' }, candidates: [] } as never),
            new WebhookConfigStore(w, box).put('o_race', `agt_${round}`, 'https://example.com/hook', ['session.completed']),
          ]),
        );
        const failed = results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason));
        assert.deepEqual(failed, [], `round ${round}`);
      }
      assert.equal(await db.collection('credentials').countDocuments({ org_id: 'o_race' }), 10);
      assert.equal(await db.collection('routers').countDocuments({ org_id: 'o_race' }), 10);
      assert.equal(await db.collection('webhook_configs').countDocuments({ org_id: 'o_race' }), 10);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  it('batch items are stored in chunks under the document limit however large their metadata is', async function () {
    this.timeout(60_000);
    // 500 items whose metadata values are 4-byte characters: about 17 MB of JSON, allowed by the batch
    // body limit and the metadata schema (which counts characters). One chunk of them was refused.
    const value = '\u{1F600}'.repeat(170);
    const metadata = Object.fromEntries(Array.from({ length: 50 }, (_, k) => [`k${k}`, value]));
    const items: BatchItem[] = Array.from({ length: 500 }, (_, index) => ({ index, session_id: `ses_${index}`, status: 'running', last_message_status: 'queued', agent_id: 'agt', version_id: 'ver', llm_id: 'main', metadata, transcript_url: null, error: null }));
    const store = new BatchStore(db);
    const chunks = await store.saveItems('bat_big', items);
    assert.ok(chunks > 1, `${chunks} chunks`);
    const back = await store.items({ _id: 'bat_big', chunk_count: chunks });
    assert.deepEqual(back.map((i) => i.index), items.map((i) => i.index));
    assert.equal(back[499].metadata.k49, value);
  });

  it('GridFS keeps a multi-chunk blob byte for byte, and deletes it', async () => {
    const blobs = new BlobStore(db);
    const bytes = Buffer.alloc(700 * 1024);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + (i >> 10)) & 0xff;
    await pipeline(Readable.from([bytes.subarray(0, 300_000), bytes.subarray(300_000)]), blobs.upload('files', 'file_sem', 'b.bin', { org_id: 'o' }));
    assert.deepEqual(await blobs.exists('files', 'file_sem'), { length: bytes.length });
    const chunks: Buffer[] = [];
    for await (const c of blobs.download('files', 'file_sem')) chunks.push(c as Buffer);
    assert.ok(Buffer.concat(chunks).equals(bytes));
    await blobs.delete('files', 'file_sem');
    assert.equal(await blobs.exists('files', 'file_sem'), null);
    assert.equal(await db.collection('files.chunks').countDocuments({ files_id: 'file_sem' }), 0);
  });
  // Through mongos the stores add the shard key to by-id filters (src/store/shard-keys.ts); elsewhere they read by _id alone.
  for (const sharded of [false, true]) {
    it(`ledger and message reads answer the same with${sharded ? '' : 'out'} the shard key in their filters`, async () => {
      const [ledger, messages] = [new LedgerStore(db, sharded), new MessageStore(db, sharded)];
      const [sid, other] = [`ses_sk${Number(sharded)}a`, `ses_sk${Number(sharded)}b`];
      const now = new Date();
      const event = (s: string, n: number) => toEventDoc('org_sk', s, n, { type: 'message.status_changed', message_id: null, source: 'platform', actor: { type: 'system', id: null }, data: { message_id: 'msg_sk', from: null, to: 'queued', attempt: n } }, now, {});
      await ledger.append([1, 2, 3].map((n) => event(sid, n)));
      await ledger.append([1].map((n) => event(other, n)));
      assert.deepEqual((await ledger.after(sid, 1, 10)).map((e) => e.sequence_number), [2, 3]);
      assert.equal((await ledger.get(sid, 3))?.data_json, '{"message_id":"msg_sk","from":null,"to":"queued","attempt":3}');
      assert.equal(await ledger.get(sid, 4), null);
      const msg = (id: string, s: string, status: 'queued' | 'completed') => ({ id, session_id: s, sequence_number: 1, parts: [], metadata: null, status, attempt: 1, model_calls: 0, pending_tool_calls: [], output: { parts: [] }, error: null, created_at: now.toISOString(), completed_at: null });
      // Written the way a turn writes them (no session document here: its update matches nothing).
      const writer = new ProjectionWriter(new SessionStore(db), messages);
      await writer.save('org_sk', emptySessionState(sid), [msg(`msg_sk${Number(sharded)}`, sid, 'queued')]);
      await writer.save('org_sk', emptySessionState(sid), [msg(`msg_sk${Number(sharded)}`, sid, 'completed')]); // the upsert replaces
      assert.equal((await messages.get('org_sk', sid, `msg_sk${Number(sharded)}`))?.status, 'completed');
      assert.equal(await messages.get('org_sk', other, `msg_sk${Number(sharded)}`), null, 'another session’s message is not found');
      assert.equal(await messages.get('org_other', sid, `msg_sk${Number(sharded)}`), null, 'another org’s message is not found');
      assert.deepEqual((await messages.byIds(other, [`msg_sk${Number(sharded)}`])).length, 0);
      assert.equal(await db.collection('messages').countDocuments({ _id: `msg_sk${Number(sharded)}` as never }), 1);
    });
  }
});
