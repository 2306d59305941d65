import assert from 'node:assert/strict';
import { MongoClient, type Db } from 'mongodb';
import { BatchStore, type BatchDoc } from '../../src/store/batches.js';
import { ensureIndexes } from '../../src/store/indexes.js';
import { requiredEnv, uniqueName } from '../support/harness.js';

/**
 * Settlement tickets count a batch's settled children: they must come out
 * 1..n with no gap and no repeat however many processes take them at once,
 * and a process's concurrent takers share their inserts.
 */
describe('batch settlement tickets', () => {
  const clients: MongoClient[] = [];
  let db: Db;
  let inserts = 0;

  /** One "process": its own client and store, as two workers would have. */
  async function process(): Promise<BatchStore> {
    const client = new MongoClient(requiredEnv('MONGODB_URL'), { directConnection: true, monitorCommands: true });
    client.on('commandStarted', (e) => {
      if (e.commandName === 'insert' && e.command.insert === 'batch_settlements') inserts++;
    });
    await client.connect();
    clients.push(client);
    return new BatchStore(client.db(db.databaseName));
  }

  before(async () => {
    const client = new MongoClient(requiredEnv('MONGODB_URL'), { directConnection: true });
    await client.connect();
    clients.push(client);
    db = client.db(uniqueName('troupe_tickets'));
    await ensureIndexes(db);
  });
  after(async () => {
    await db?.dropDatabase();
    for (const c of clients) await c.close();
  });

  it('two processes taking 40 tickets each, all at once, get 1..80 once each, in fewer inserts than tickets', async () => {
    const [a, b] = [await process(), await process()];
    const batchId = uniqueName('bat');
    await db.collection<BatchDoc>('batches').insertOne({ _id: batchId, org_id: 'org_t', key_slot: batchId, settled: 0 } as BatchDoc);
    inserts = 0;
    // Every taker starts from the same stale hint, as the batch actor's concurrent jobs do.
    const tickets = await Promise.all(Array.from({ length: 80 }, (_, i) => (i % 2 ? a : b).takeTicket(batchId, 0)));
    assert.deepEqual([...tickets].sort((x, y) => x - y), Array.from({ length: 80 }, (_, i) => i + 1));
    const rows = await db.collection('batch_settlements').countDocuments({ batch_id: batchId });
    assert.equal(rows, 80, 'one row per ticket');
    assert.equal((await db.collection<BatchDoc>('batches').findOne({ _id: batchId }))?.settled, 80, 'the header hint reached the last ticket');
    // Each taker probing upwards from the stale hint on its own took thousands of inserts here. The two
    // processes still race each other ticket by ticket (only a ticket above a taken one may be tried).
    assert.ok(inserts < 80, `${inserts} inserts for 80 tickets`);
    // A later taker with the stale hint continues the sequence.
    assert.equal(await a.takeTicket(batchId, 0), 81);
  });

  it('the takers of one process share their inserts', async () => {
    const a = await process();
    const batchId = uniqueName('bat');
    await db.collection<BatchDoc>('batches').insertOne({ _id: batchId, org_id: 'org_t', key_slot: batchId, settled: 0 } as BatchDoc);
    inserts = 0;
    const tickets = await Promise.all(Array.from({ length: 50 }, () => a.takeTicket(batchId, 0)));
    assert.deepEqual([...tickets].sort((x, y) => x - y), Array.from({ length: 50 }, (_, i) => i + 1));
    assert.ok(inserts <= 3, `${inserts} inserts for 50 tickets`);
  });
});
