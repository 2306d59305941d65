/**
 * List reads as an org grows (figures, not pass/fail): each read the old way
 * and the new way, side by side in one run, on each local MongoDB-wire server.
 * - A batch's children: 2,000 `findOne({_id})` (64 at a time) against one
 *   `find({org_id, batch_id})` (SessionStore.batchChildren).
 * - GET /v1/usage?group_by=session: every record of the range streamed into
 *   the process and grouped in a Map (the old `summarize`) against one page of
 *   20 groups plus the totals (UsageStore.sums / totals).
 * - A session list filtered by a metadata value no session has: the unbounded
 *   filtered find against the bounded walk (SessionStore.list).
 * Prints milliseconds (median of --rounds) and the rows each read brought into
 * the process. The store is the local server the tests use, not MongoDB: the
 * local servers scan for nearly every filter (docs/decisions.md), so the
 * figures show round trips and rows moved, not index use.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient, type Db } from 'mongodb';
import { startMongoWire, type MongoKind } from '../../infra/services/mongo-wire.js';
import { newId } from '../../src/domain/ids.js';
import { ensureIndexes } from '../../src/store/indexes.js';
import { SessionStore } from '../../src/store/sessions.js';
import type { SessionDoc } from '../../src/domain/views/session.js';
import { UsageStore, type UsageDoc } from '../../src/store/usage.js';
import { groupPage, totalOf } from '../../src/app/usage-report.js';
import { benchArgs } from '../support/args.js';

const USAGE = 'Usage: node dist/bench/lists/run.js [--servers mongo-java-server,ferretdb] [--sessions 10000] [--children 2000] [--usage-sessions 3000] [--rounds 3]';
const values = benchArgs(
  USAGE,
  {
    servers: { type: 'string', default: 'mongo-java-server,ferretdb' },
    sessions: { type: 'string', default: '10000' },
    children: { type: 'string', default: '2000' },
    'usage-sessions': { type: 'string', default: '3000' },
    rounds: { type: 'string', default: '3' },
  },
  ['sessions', 'children', 'usage-sessions', 'rounds'],
);
const SESSIONS = Number(values.sessions);
const CHILDREN = Number(values.children);
const USAGE_SESSIONS = Number(values['usage-sessions']);
const ROUNDS = Math.max(1, Number(values.rounds));
const ORG = 'org_bench';

function session(id: string, batchId: string | null, metadata: Record<string, string>): SessionDoc {
  return {
    _id: id, org_id: ORG, agent_id: 'agt_bench', version_id: 'ver_bench', name: null, storage_binding_id: null, llm_id: 'main', internet_access: false,
    metadata, secrets: null, llm_api_key: null, batch_id: batchId, priority: batchId ? 'batch' : 'interactive', created_at: new Date(),
    status: 'idle', last_sequence: 3, last_message_id: null, last_message_status: 'completed', running_message_id: null, queued_message_ids: [], recent_commands: [],
  };
}

async function seed(db: Db): Promise<{ batchId: string; childIds: string[] }> {
  const batchId = newId('batch');
  const docs = Array.from({ length: SESSIONS }, (_, i) => session(newId('session'), i < CHILDREN ? batchId : null, { team: `t${i % 50}` }));
  const sessions = db.collection<SessionDoc>('sessions');
  for (let i = 0; i < docs.length; i += 1000) await sessions.insertMany(docs.slice(i, i + 1000), { ordered: false });
  const hour = new Date(Date.UTC(2026, 10, 1, 10));
  const records: UsageDoc[] = [];
  for (let i = 0; i < USAGE_SESSIONS; i++) {
    const sid = newId('session');
    for (const [model, currency] of [['m-a', 'USD'], ['m-b', 'EUR'], ['m-c', null]] as const) {
      for (const h of [0, 1]) records.push({ _id: `${sid}:${model}:${h}`, org_id: ORG, router_id: null, agent_id: 'agt_bench', session_id: sid, model, currency, hour: new Date(hour.getTime() + h * 3_600_000), requests: 1, input_tokens: 100, output_tokens: 10, cost: currency ? 0.001 : 0 });
    }
  }
  for (let i = 0; i < records.length; i += 1000) await db.collection<UsageDoc>('usage').insertMany(records.slice(i, i + 1000), { ordered: false });
  return { batchId, childIds: docs.slice(0, CHILDREN).map((d) => d._id) };
}

/** The read as it was: each child by `_id`, 64 at a time. */
async function childrenById(db: Db, ids: string[]): Promise<number> {
  const col = db.collection<SessionDoc>('sessions');
  let next = 0;
  let found = 0;
  const lane = async () => {
    while (next < ids.length) if (await col.findOne({ _id: ids[next++] }, { projection: { status: 1, last_message_status: 1, agent_id: 1, version_id: 1, llm_id: 1, metadata: 1 } })) found++;
  };
  await Promise.all(Array.from({ length: 64 }, lane));
  return found;
}

/** GET /v1/usage?group_by=session as it was: every record of the range into one Map of tallies. */
async function usageAsBefore(db: Db): Promise<number> {
  const groups = new Map<string | null, number>();
  let n = 0;
  for await (const d of db.collection<UsageDoc>('usage').find({ org_id: ORG, hour: { $gte: new Date(0) } })) {
    groups.set(d.session_id ?? null, (groups.get(d.session_id ?? null) ?? 0) + d.requests);
    n++;
  }
  return n;
}

async function timed(fn: () => Promise<number>): Promise<{ ms: number; rows: number }> {
  const runs: { ms: number; rows: number }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t = performance.now();
    const rows = await fn();
    runs.push({ ms: performance.now() - t, rows });
  }
  runs.sort((a, b) => a.ms - b.ms);
  return runs[Math.floor(runs.length / 2)];
}

async function benchServer(kind: MongoKind): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-bench-lists-'));
  const server = await startMongoWire(dir, () => undefined, { kind, memory: true });
  const client = await new MongoClient(server.url).connect();
  try {
    const db = client.db('bench_lists');
    await ensureIndexes(db);
    const { batchId, childIds } = await seed(db);
    const sessions = new SessionStore(db);
    const usage = new UsageStore(db);
    const range = { orgId: ORG, from: new Date(0), to: null };
    const rows: [string, { ms: number; rows: number }][] = [
      [`batch children (${CHILDREN}), findOne each`, await timed(() => childrenById(db, childIds))],
      [`batch children (${CHILDREN}), one find`, await timed(async () => (await sessions.batchChildren(ORG, batchId)).length)],
      [`usage by session (${USAGE_SESSIONS} sessions), all records in`, await timed(() => usageAsBefore(db))],
      [
        'usage by session, a page of 20 + totals',
        await timed(async () => {
          let n = 0;
          const count = async function* <T>(it: AsyncIterable<T>) {
            for await (const x of it) (n++, yield x);
          };
          const [page] = await Promise.all([groupPage(count(usage.sums(range, 'session_id')), 'session_id', 20), totalOf(count(usage.totals(range)))]);
          if (page.groups.length !== 20) throw new Error(`a page of ${page.groups.length}`);
          return n;
        }),
      ],
      [`sessions by absent metadata (${SESSIONS}), unbounded`, await timed(async () => (await db.collection<SessionDoc>('sessions').find({ org_id: ORG, 'metadata.team': 'none' }).sort({ _id: -1 }).limit(21).toArray()).length)],
      [`sessions by absent metadata (${SESSIONS}), bounded walk`, await timed(async () => (await sessions.list(ORG, { team: 'none' }, 20, null)).rows.length)],
    ];
    const sumsInStore = await usage.sumsInStore({ org_id: ORG });
    console.log(`\n${kind} (usage summed in the store: ${sumsInStore ? 'yes' : 'no, records folded in the process'})`);
    for (const [name, r] of rows) console.log(`  ${name.padEnd(58)} ${r.ms.toFixed(0).padStart(7)} ms   ${String(r.rows).padStart(6)} rows into the process`);
  } finally {
    await client.close();
    await server.proc.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  console.log(`sessions ${SESSIONS} (batch children ${CHILDREN}), usage ${USAGE_SESSIONS} sessions × 6 records, median of ${ROUNDS}`);
  for (const kind of String(values.servers).split(',') as MongoKind[]) await benchServer(kind);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
