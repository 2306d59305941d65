import assert from 'node:assert/strict';
import { MongoClient, type Db } from 'mongodb';
import type { MessageState, SessionState } from '../../src/domain/ledger.js';
import { ensureIndexes } from '../../src/store/indexes.js';
import { MessageStore } from '../../src/store/messages.js';
import { ProjectionWriter } from '../../src/store/projection-writer.js';
import { SessionStore } from '../../src/store/sessions.js';
import { requiredEnv, uniqueName } from '../support/harness.js';
import { TcpProxy } from '../support/tcp-proxy.js';

function session(last_sequence: number, status: 'idle' | 'running'): SessionState {
  return { id: 'ses_fence', status, last_sequence, last_message_id: 'msg_fence', last_message_status: status === 'idle' ? 'completed' : 'running', running_message_id: status === 'idle' ? null : 'msg_fence', queued_message_ids: [], recent_commands: [] };
}

function message(last_sequence: number | undefined, status: 'running' | 'completed'): MessageState {
  const m: MessageState = { id: 'msg_fence', session_id: 'ses_fence', sequence_number: 1, parts: [], metadata: null, status, attempt: 1, model_calls: 1, pending_tool_calls: [], output: { parts: [] }, error: null, created_at: new Date(0).toISOString(), completed_at: status === 'completed' ? new Date(1).toISOString() : null };
  if (last_sequence !== undefined) m.last_sequence = last_sequence;
  return m;
}

/**
 * The read models' sequence fence, on whichever MongoDB-wire server this leg
 * runs: a write of an older state than the stored one (one a partition held
 * and delivered late, after another worker saved newer states) changes
 * nothing and fails nothing; the fault suite's MongoDB partition shows it
 * end to end.
 */
describe('read-model writes are fenced by last_sequence', () => {
  let client: MongoClient;
  let db: Db;
  let writer: ProjectionWriter;
  before(async () => {
    client = new MongoClient(requiredEnv('MONGODB_URL'), { directConnection: true });
    await client.connect();
    db = client.db(uniqueName('troupe_fence'));
    await ensureIndexes(db);
    writer = new ProjectionWriter(new SessionStore(db), new MessageStore(db));
    await db.collection('sessions').insertOne({ _id: 'ses_fence' as never, ...session(0, 'idle'), org_id: 'org_1' });
  });
  after(async () => {
    await db?.dropDatabase();
    await client?.close();
  });

  const stored = async () => [
    await db.collection('sessions').findOne({ _id: 'ses_fence' as never }, { projection: { _id: 0, status: 1, last_sequence: 1 } }),
    await db.collection('messages').findOne({ _id: 'msg_fence' as never }, { projection: { _id: 0, status: 1, last_sequence: 1 } }),
  ];

  it('an older state arriving after a newer one is ignored; newer and equal ones are written', async () => {
    await writer.save('org_1', session(4, 'running'), [message(4, 'running')]);
    assert.deepEqual(await stored(), [{ status: 'running', last_sequence: 4 }, { status: 'running', last_sequence: 4 }]);
    await writer.save('org_1', session(6, 'idle'), [message(6, 'completed')]);
    // The late one: resolves (nothing to retry), changes nothing.
    await writer.save('org_1', session(4, 'running'), [message(4, 'running')]);
    assert.deepEqual(await stored(), [{ status: 'idle', last_sequence: 6 }, { status: 'completed', last_sequence: 6 }]);
    await writer.save('org_1', session(6, 'idle'), [message(6, 'completed')]);
    await writer.save('org_1', session(7, 'running'), [message(7, 'running')]);
    assert.deepEqual(await stored(), [{ status: 'running', last_sequence: 7 }, { status: 'running', last_sequence: 7 }]);
  });

  it('a messages write cut off by a lost connection fails the save, though the session write after it would pass', async () => {
    // The driver reports a connection lost mid-write as a bulk-write error with no write errors; counted as
    // "only stale refusals", the session moved on without its messages (CI's MongoDB-restart fault test).
    const url = new URL(requiredEnv('MONGODB_URL'));
    const proxy = new TcpProxy(Number(url.port));
    await proxy.start();
    url.port = String(proxy.port);
    const cut = new MongoClient(url.toString(), { directConnection: true, serverSelectionTimeoutMS: 5000 });
    try {
      await cut.connect();
      const cdb = cut.db(db.databaseName);
      const through = new ProjectionWriter(new SessionStore(cdb), new MessageStore(cdb));
      await through.save('org_1', session(10, 'running'), [message(10, 'running')]);
      proxy.blackhole();
      const saved = through.save('org_1', session(12, 'idle'), [message(12, 'completed')]);
      saved.catch(() => undefined);
      await new Promise((r) => setTimeout(r, 300));
      assert.ok(proxy.dropAll() > 0, 'the held write had a connection to cut');
      proxy.heal();
      await assert.rejects(saved, /closed|reset|ECONNRESET/i);
      assert.deepEqual(await stored(), [{ status: 'running', last_sequence: 10 }, { status: 'running', last_sequence: 10 }]);
      // The turn's retry writes both.
      await through.save('org_1', session(12, 'idle'), [message(12, 'completed')]);
      assert.deepEqual(await stored(), [{ status: 'idle', last_sequence: 12 }, { status: 'completed', last_sequence: 12 }]);
    } finally {
      await cut.close().catch(() => undefined);
      await proxy.close();
    }
  });

  it('a stored message without last_sequence (written before the field) takes any write', async () => {
    await db.collection('messages').updateOne({ _id: 'msg_fence' as never }, { $unset: { last_sequence: '' } });
    await writer.save('org_1', session(8, 'idle'), [message(3, 'completed')]);
    assert.deepEqual((await stored())[1], { status: 'completed', last_sequence: 3 });
  });
});
