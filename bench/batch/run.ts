/**
 * Batch benchmark (issue 7): POST a batch of N items with the scripted model
 * and report the time to the POST response and the time until every first
 * turn has completed, while an interactive client keeps calling
 * messages/sync on sessions of its own (one call at a time); their latency
 * percentiles are printed too. Figures, not pass/fail.
 * Usage: node dist/bench/batch/run.js [--sizes 1000,10000] [--workers 1] [--timeout 600]
 */
import { parseArgs } from 'node:util';
import { fmt, summary } from '../support/percentiles.js';
import { scriptedAgent, startStack } from '../support/stack.js';

const { values } = parseArgs({ options: { sizes: { type: 'string', default: '1000,10000' }, workers: { type: 'string', default: '1' }, timeout: { type: 'string', default: '600' } } });

async function main(): Promise<void> {
  const stack = await startStack({ workers: Number(values.workers) });
  try {
    const agentId = await scriptedAgent(stack.db, [{ text: 'done' }]);
    const auth = { Authorization: `Bearer ${stack.apiKey}`, 'Content-Type': 'application/json' };
    const interactive: string[] = [];
    for (let i = 0; i < 20; i++) interactive.push(((await (await fetch(`${stack.base}/v1/agents/${agentId}/sessions`, { method: 'POST', headers: auth, body: '{}' })).json()) as { id: string }).id);
    for (const size of values.sizes!.split(',').map(Number)) {
      const items = Array.from({ length: size }, (_, i) => ({ agent_id: agentId, metadata: { n: String(i) }, message: { content: [{ type: 'text', text: `item ${i}` }] } }));
      const started = performance.now();
      const res = await fetch(`${stack.base}/v1/session-batches`, { method: 'POST', headers: { Authorization: `Bearer ${stack.apiKey}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ items }) });
      const body = (await res.json()) as { batch_id: string; sessions: { session_id: string | null }[] };
      const accepted = performance.now() - started;
      if (res.status !== 201) throw new Error(`POST failed ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
      const ids = new Set(body.sessions.map((s) => s.session_id).filter((s): s is string => !!s));
      // The interactive client: one messages/sync at a time, round-robin over its sessions, until the batch is done.
      let draining = true;
      const syncs: number[] = [];
      let failures = 0;
      const probe = (async () => {
        for (let i = 0; draining; i++) {
          const t = performance.now();
          const r = await fetch(`${stack.base}/v1/sessions/${interactive[i % interactive.length]}/messages/sync`, { method: 'POST', headers: auth, body: JSON.stringify({ parts: [{ type: 'text', text: `ping ${i}` }] }) });
          const m = (await r.json()) as { status?: string };
          if (r.status !== 200 || m.status !== 'completed') failures++;
          syncs.push(performance.now() - t);
          await new Promise((res) => setTimeout(res, 100));
        }
      })();
      let done = 0;
      const deadline = Date.now() + Number(values.timeout) * 1000;
      while (done < ids.size && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 2000));
        // One scan of the small messages collection; FerretDB would scan for $in anyway.
        const rows = await stack.db.collection<{ session_id: string }>('messages').find({ status: 'completed' }, { projection: { session_id: 1 } }).toArray();
        done = rows.filter((r) => ids.has(r.session_id)).length;
      }
      const total = performance.now() - started;
      draining = false;
      await probe;
      const p = summary(syncs);
      console.log(`batch of ${size}: POST answered in ${(accepted / 1000).toFixed(2)} s; ${done}/${ids.size} first turns completed after ${(total / 1000).toFixed(1)} s${done < ids.size ? ' (timed out)' : ''}`);
      console.log(`  interactive messages/sync during the drain: n=${syncs.length}, p50 ${fmt(p.p50)}, p99 ${fmt(p.p99)}, max ${fmt(p.max)}, not completed ${failures}`);
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
