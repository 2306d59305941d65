/**
 * Batch benchmark (issue 7): POST a batch of N items with the scripted model
 * and report the time to the POST response and the time until every first
 * turn has completed. Figures, not pass/fail.
 * MONGODB_URL runs it against that server; TROUPE_LOCAL_MONGO picks the local one.
 * Usage: node dist/bench/batch/run.js [--sizes 1000,10000] [--workers 1] [--timeout 600]
 */
import { parseArgs } from 'node:util';
import { scriptedAgent, startStack, withServerCpu } from '../support/stack.js';

const { values } = parseArgs({ options: { sizes: { type: 'string', default: '1000,10000' }, workers: { type: 'string', default: '1' }, timeout: { type: 'string', default: '600' } } });

async function main(): Promise<void> {
  const stack = await startStack({ workers: Number(values.workers) });
  try {
    const agentId = await scriptedAgent(stack.db, [{ text: 'done' }]);
    for (const size of values.sizes!.split(',').map(Number)) {
      const items = Array.from({ length: size }, (_, i) => ({ agent_id: agentId, metadata: { n: String(i) }, message: { content: [{ type: 'text', text: `item ${i}` }] } }));
      const { result, cpu } = await withServerCpu(stack, async () => {
        const started = performance.now();
        const res = await fetch(`${stack.base}/v1/session-batches`, { method: 'POST', headers: { Authorization: `Bearer ${stack.apiKey}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ items }) });
        const body = (await res.json()) as { batch_id: string; sessions: { session_id: string | null }[] };
        const accepted = performance.now() - started;
        if (res.status !== 201) throw new Error(`POST failed ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
        const ids = new Set(body.sessions.map((s) => s.session_id).filter((s): s is string => !!s));
        let done = 0;
        const deadline = Date.now() + Number(values.timeout) * 1000;
        while (done < ids.size && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 2000));
          // One scan of the small messages collection; FerretDB would scan for $in anyway.
          const rows = await stack.db.collection<{ session_id: string }>('messages').find({ status: 'completed' }, { projection: { session_id: 1 } }).toArray();
          done = rows.filter((r) => ids.has(r.session_id)).length;
        }
        const total = performance.now() - started;
        return { accepted, done, total, ids };
      });
      const { accepted, done, total, ids } = result;
      console.log(`batch of ${size}: POST answered in ${(accepted / 1000).toFixed(2)} s; ${done}/${ids.size} first turns completed after ${(total / 1000).toFixed(1)} s${done < ids.size ? ' (timed out)' : ''}${cpu ? `; ${stack.services.mongoKind} CPU ${cpu.average.toFixed(2)} cores on average, ${cpu.peak.toFixed(2)} peak` : ''}`);
    }
  } finally {
    await stack.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
