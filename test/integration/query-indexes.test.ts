import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { MongoClient, type CommandStartedEvent, type Db, type Document, type IndexDescription } from 'mongodb';
import { SecretBox } from '../../src/lib/crypto/secret-box.js';
import { ensureIndexes, INDEXES } from '../../src/store/indexes.js';
import { createStores, type Stores } from '../../src/store/stores.js';
import { requiredEnv, uniqueName } from '../support/harness.js';

/**
 * Every query the hot paths, list endpoints and the reaper send has an index
 * that serves its filter and sort on real MongoDB. The local servers answer
 * a collection scan as fast as an indexed read at test sizes, so the check
 * reads the queries the stores really send (command monitoring) and matches
 * them against INDEXES by MongoDB's rule: equality fields first, then the
 * sort, then ranges.
 */

type Shape = { collection: string; filter: Document; sort: Document | undefined };

const OPERATOR = /^\$/;
/**
 * Client-chosen fields filtered on fetch within the org's index range: the
 * metadata of the session list (docs/decisions.md, "Indexes for real MongoDB").
 */
const FETCH_FILTERED: Record<string, RegExp> = { sessions: /^metadata\./ };
/** A few documents per org (shard-keys.ts): any read within the org's index range is cheap, sorted or not. */
const FEW_PER_ORG = new Set(['routers', 'credentials', 'storage_bindings', 'webhook_configs']);

function isEquality(v: unknown): boolean {
  if (v === null || typeof v !== 'object' || v instanceof Date || Array.isArray(v)) return true;
  const ops = Object.keys(v as object);
  return ops.length === 1 && ops[0] === '$eq';
}

/** Top-level filter fields split into equality and other conditions; `$or` branches that pin `_id` count as a point. */
function fieldsOf(filter: Document): { eq: Set<string>; other: Set<string> } {
  const eq = new Set<string>();
  const other = new Set<string>();
  for (const [k, v] of Object.entries(filter)) {
    if (OPERATOR.test(k)) continue;
    (isEquality(v) ? eq : other).add(k);
  }
  return { eq, other };
}

/** Whether one index (field order as declared) serves the filter and sort. */
function indexServes(index: IndexDescription, shape: Shape): boolean {
  const fields = Object.keys(index.key);
  const { eq, other } = fieldsOf(shape.filter);
  if (index.unique && fields.every((f) => eq.has(f))) return true;
  if (FEW_PER_ORG.has(shape.collection) && fields[0] === 'org_id' && eq.has('org_id')) return true;
  let k = 0;
  while (k < fields.length && eq.has(fields[k])) k++;
  // What the index leaves to the fetch: client metadata, and the org when an id narrower than it leads (a session's messages).
  const narrower = fields.slice(0, k).some((f) => f !== 'org_id' && /(^|_)id$/.test(f));
  const left = [...eq].filter((f) => !fields.slice(0, k).includes(f) && !FETCH_FILTERED[shape.collection]?.test(f));
  if (left.some((f) => f !== 'org_id' || !narrower)) return false;
  if (k === 0 && !other.has(fields[0])) return false;
  const sort = Object.entries(shape.sort ?? {}).filter(([f]) => !eq.has(f));
  if (!sort.length) return true;
  const dir = (f: string) => Number((index.key as Record<string, unknown>)[f]);
  const same = sort.every(([f, d], i) => fields[k + i] === f && dir(f) === Number(d));
  const reversed = sort.every(([f, d], i) => fields[k + i] === f && dir(f) === -Number(d));
  return same || reversed;
}

async function drain(rows: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of rows);
}

function served(shape: Shape, indexes: Record<string, IndexDescription[]> = INDEXES): boolean {
  const all: IndexDescription[] = [{ key: { _id: 1 }, name: '_id_', unique: true }, ...(indexes[shape.collection] ?? [])];
  return all.some((i) => indexServes(i, shape));
}

/** The driver sends a sort as a Map (key order is the sort order). */
function plain(sort: unknown): Document | undefined {
  return sort instanceof Map ? Object.fromEntries(sort) : (sort as Document | undefined);
}

/** The filter and sort of each read, update and delete a command carries. */
function shapesOf(ev: CommandStartedEvent): Shape[] {
  const c = ev.command;
  const collection = c[ev.commandName] as string;
  switch (ev.commandName) {
    case 'find':
      return [{ collection, filter: c.filter ?? {}, sort: plain(c.sort) }];
    case 'findAndModify':
      return [{ collection, filter: c.query ?? {}, sort: plain(c.sort) }];
    case 'delete':
      return (c.deletes as { q: Document }[]).map((d) => ({ collection, filter: d.q, sort: undefined }));
    case 'update':
      return (c.updates as { q: Document }[]).map((u) => ({ collection, filter: u.q, sort: undefined }));
    case 'count':
      return [{ collection, filter: c.query ?? {}, sort: undefined }];
    case 'aggregate': {
      const [first, second] = c.pipeline as Document[];
      return [{ collection, filter: first?.$match ?? {}, sort: plain(second?.$sort) }];
    }
    default:
      return [];
  }
}

describe('every hot and list query has an index that serves it', () => {
  let client: MongoClient;
  let db: Db;
  let stores: Stores;
  const seen: Shape[] = [];

  before(async () => {
    client = new MongoClient(requiredEnv('MONGODB_URL'), { monitorCommands: true });
    await client.connect();
    db = client.db(uniqueName('troupe_idx'));
    await ensureIndexes(db);
    stores = createStores(db, new SecretBox(new Map([['k', randomBytes(32)]]), 'k'));
    client.on('commandStarted', (ev) => {
      if (ev.databaseName === db.databaseName) seen.push(...shapesOf(ev));
    });
  });
  after(async () => {
    await db?.dropDatabase();
    await client?.close();
  });

  beforeEach(() => {
    seen.length = 0;
  });

  /** Runs `work` and checks each query it sent; returns how many were checked, so a test cannot pass on none. */
  async function check(work: () => Promise<unknown>): Promise<void> {
    await work();
    assert.ok(seen.length > 0, 'the work sent queries');
    const unserved = seen.filter((s) => !served(s)).map((s) => `${s.collection} ${JSON.stringify(s.filter)} sort ${JSON.stringify(s.sort ?? {})}`);
    assert.deepEqual(unserved, [], 'queries without an index that serves them');
  }

  it('the matcher tells a scan from an indexed read', () => {
    const before: Record<string, IndexDescription[]> = { ...INDEXES, idempotency_keys: [{ key: { created_at: 1 }, name: 'created_at' }], usage: [{ key: { org_id: 1, router_id: 1, hour: 1 }, name: 'org_router_hour' }] };
    assert.equal(served({ collection: 'idempotency_keys', filter: { scope: 'session:s1' }, sort: undefined }, before), false);
    assert.equal(served({ collection: 'usage', filter: { org_id: 'o', session_id: 's' }, sort: undefined }, before), false);
    assert.equal(served({ collection: 'sessions', filter: { org_id: 'o', status: 'idle', created_at: { $lt: new Date() } }, sort: { _id: 1 } }, { ...INDEXES, sessions: [{ key: { org_id: 1, status: 1 }, name: 'org_status' }, { key: { org_id: 1, _id: 1 }, name: 'org_id' }] }), false);
    assert.equal(served({ collection: 'messages', filter: { org_id: 'o', session_id: 's', sequence_number: { $gt: 0 } }, sort: { sequence_number: 1 } }), true);
    assert.equal(served({ collection: 'webhook_deliveries', filter: { org_id: 'o', agent_id: 'a', _id: { $lt: 'x' } }, sort: { _id: -1 } }), true);
  });

  it('an index a wider one replaced is dropped at start, once the wider one is built', async () => {
    const other = client.db(uniqueName('troupe_idx_old'));
    try {
      await other.collection('sessions').createIndex({ org_id: 1, status: 1 }, { name: 'org_status' });
      // Several processes start at once after the upgrade: one drops it, the others find it gone.
      const clients = await Promise.all(Array.from({ length: 3 }, () => new MongoClient(requiredEnv('MONGODB_URL')).connect()));
      try {
        await Promise.all(clients.map((c) => ensureIndexes(c.db(other.databaseName))));
      } finally {
        await Promise.all(clients.map((c) => c.close()));
      }
      await ensureIndexes(other); // a later start finds nothing to drop
      const names = (await other.collection('sessions').listIndexes().toArray()).map((i) => i.name as string);
      assert.ok(names.includes('org_status_id'), names.join());
      assert.ok(!names.includes('org_status'), names.join());
    } finally {
      await other.dropDatabase();
    }
  });

  it('the reaper: expired keys, reservations, finished deliveries, idle sessions past retention', async () => {
    await check(async () => {
      await stores.idempotency.reap();
      await stores.snapshots.expiredReservations(new Date(), 10);
      await stores.webhookDeliveries.reapFinished(new Date());
      await stores.sessions.idleCreatedBefore('org_1', new Date(), 10);
      await stores.sessions.idleCreatedBefore('org_1', new Date(), 10, 'sess_5');
    });
  });

  it('schedules: lists, runs, the worker-start reconcile and the reaper’s run scans', async () => {
    const run = { _id: 'sch_1:0', org_id: 'org_1', schedule_id: 'sch_1', scheduled_for: new Date(0), session_id: 'ses_1', message_id: 'msg_1', status: 'pending' as const, error: null, created_at: new Date() };
    await check(async () => {
      await stores.schedules.listByAgent('org_1', 'agt_1', 10, 'sch_0');
      await stores.schedules.listAll(10, null);
      await stores.schedules.listAll(10, 'sch_0');
      await stores.schedules.claimRun(run);
      await stores.schedules.failRun(run);
      await stores.schedules.listRuns('org_1', 'sch_1', 10, Date.now());
      await stores.schedules.abandonRuns(new Date(), 10, 'lost');
      await stores.schedules.reapRuns(new Date(), 10);
    });
  });

  it('agent soft-deletion: the agent, then its sessions', async () => {
    await check(async () => {
      await stores.agents.softDelete('org_1', 'agent_1');
      await stores.sessions.markAgentDeleted('org_1', 'agent_1', new Date());
    });
  });

  it('session deletion: ledger, messages and the session Idempotency-Key scope', async () => {
    await check(async () => {
      await stores.ledger.removeSession('sess_1');
      await stores.messages.removeSession('sess_1');
      await stores.idempotency.removeScope('session:sess_1');
      await stores.sessions.remove('org_1', 'sess_1');
    });
  });

  it('list endpoints with their cursors', async () => {
    await check(async () => {
      await stores.sessions.list('org_1', {}, 10, null);
      await stores.sessions.list('org_1', { team: 'a' }, 10, 'sess_9');
      await stores.messages.list('org_1', 'sess_1', 10, 0);
      await stores.files.list('org_1', 10, 'file_1');
      await stores.agents.list('org_1', { limit: 10, after: 'agent_1' });
      await stores.agents.listVersions('org_1', 'agent_1', { limit: 10, after: null });
      await stores.storageBindings.list('org_1', { limit: 10, after: 'sb_1' });
      await stores.storageBindings.filesOf('org_1', 'sb_1');
      await stores.storageBindings.filesPage('org_1', 'sb_1', { limit: 10, after: 'notes/a.md' });
      await stores.webhookDeliveries.list('org_1', 'agent_1', 10, 'dlv_1');
      await stores.routers.list('org_1', 10, null);
      await stores.credentials.list('org_1', { limit: 10, after: 'OPENAI_API_KEY' });
      await stores.routers.naming('org_1', 'OPENAI_API_KEY', 3);
      await stores.credentials.stored('org_1', ['A', 'B']);
      await stores.storageBindings.sizesOf('org_1', 'sb_1');
      await stores.usage.add({ orgId: 'org_1', routerId: null, agentId: 'agt_1', sessionId: 'ses_1', model: 'm', currency: 'USD' }, { requests: 1, input: 1, output: 1, cost: 1 });
      const range = { orgId: 'org_1', from: new Date(0), to: new Date() };
      for (const after of [undefined, { key: null }, { key: 'ses_0' }]) await drain(stores.usage.sums(range, 'session_id', after));
      await drain(stores.usage.totals(range));
      // Grouped by model or agent only where the server sums a $group (FerretDB v1, which has no secondary index
      // to serve anything, reads the records sorted by key instead).
      if (await stores.usage.sumsInStore({ org_id: 'org_1' })) {
        await drain(stores.usage.sums({ orgId: 'org_1', from: null, to: null, sessionId: 'ses_1' }, 'model'));
        for (const field of ['model', 'agent_id'] as const) await drain(stores.usage.sums(range, field, { key: 'x' }));
      }
    });
  });

  it('hot paths: session reads and writes, the running-session cap, the sweeper, batches, webhooks', async () => {
    await check(async () => {
      await stores.sessions.byId('sess_1');
      await stores.sessions.countRunning('org_1', 5);
      await stores.sessions.running(10, 'sess_1');
      await stores.sessions.usingStorage('org_1', 'sb_1', 5);
      await stores.sessions.saveState({ id: 'sess_1', status: 'idle', last_sequence: 0, last_message_id: null, last_message_status: null, running_message_id: null, queued_message_ids: [], recent_commands: [] });
      await stores.ledger.after('sess_1', 0, 5);
      await stores.messages.byIds('sess_1', ['m1', 'm2']);
      await stores.batches.byKey('org_1', 'key');
      await stores.sessions.batchChildren('org_1', 'bat_1');
      await stores.webhookConfigs.get('org_1', 'agent_1');
      await stores.routers.byDefault('org_1');
      await stores.apiKeys.findActive('tr_sk_x');
      await stores.files.missing('org_1', ['file_1']);
      await stores.usage.add({ orgId: 'org_1', routerId: null, agentId: 'a', sessionId: 's', model: 'm', currency: null }, { requests: 1, input: 1, output: 1, cost: 0 });
    });
  });
});
