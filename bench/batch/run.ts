/**
 * Batch benchmark (issue 7): POST a batch of N items with the scripted model
 * and report the time to the POST response and the time until every first
 * turn has completed, while an interactive client keeps calling
 * messages/sync on sessions of its own (one call at a time); their latency
 * percentiles are printed too. Figures, not pass/fail.
 * MONGODB_URL runs it against that server; TROUPE_LOCAL_MONGO picks the local one.
 */
import { fmt, summary } from '../support/percentiles.js';
import { formatCpu, queryShapesPer, roundTripsPer, scriptedAgent, startStack, withCpu, type Stack } from '../support/stack.js';
import { benchArgs } from '../support/args.js';

const USAGE = 'Usage: node dist/bench/batch/run.js [--sizes 1000,10000] [--workers 1] [--timeout 600]';
const values = benchArgs(USAGE, { sizes: { type: 'string', default: '1000,10000' }, workers: { type: 'string', default: '1' }, timeout: { type: 'string', default: '600' } }, ['workers', 'timeout']);

/** The interactive client: one messages/sync at a time, round-robin over its sessions, until `stop()`. */
function interactiveProbe(stack: Stack, sessions: string[]): { stop(): Promise<{ latencies: number[]; failures: number }> } {
  const auth = { Authorization: `Bearer ${stack.apiKey}`, 'Content-Type': 'application/json' };
  let running = true;
  const latencies: number[] = [];
  let failures = 0;
  const loop = (async () => {
    for (let i = 0; running; i++) {
      const t = performance.now();
      const r = await fetch(`${stack.base}/v1/sessions/${sessions[i % sessions.length]}/messages/sync`, { method: 'POST', headers: auth, body: JSON.stringify({ parts: [{ type: 'text', text: `ping ${i}` }] }) });
      const m = (await r.json()) as { status?: string };
      if (r.status !== 200 || m.status !== 'completed') failures++;
      latencies.push(performance.now() - t);
      await new Promise((res) => setTimeout(res, 100));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { latencies, failures };
    },
  };
}

async function main(): Promise<void> {
  const stack = await startStack({ workers: Number(values.workers) });
  try {
    const agentId = await scriptedAgent(stack.db, [{ text: 'done' }]);
    const auth = { Authorization: `Bearer ${stack.apiKey}`, 'Content-Type': 'application/json' };
    const interactive: string[] = [];
    for (let i = 0; i < 20; i++) interactive.push(((await (await fetch(`${stack.base}/v1/agents/${agentId}/sessions`, { method: 'POST', headers: auth, body: '{}' })).json()) as { id: string }).id);
    for (const size of values.sizes!.split(',').map(Number)) {
      const items = Array.from({ length: size }, (_, i) => ({ agent_id: agentId, metadata: { n: String(i) }, message: { content: [{ type: 'text', text: `item ${i}` }] } }));
      const before = { worker: stack.roundTrips(), web: stack.webRoundTrips() };
      const { result, cpu } = await withCpu(stack, async () => {
        const started = performance.now();
        const res = await fetch(`${stack.base}/v1/session-batches`, { method: 'POST', headers: auth, body: JSON.stringify({ items }) });
        const body = (await res.json()) as { batch_id: string; sessions: { session_id: string | null }[] };
        const accepted = performance.now() - started;
        if (res.status !== 201) throw new Error(`POST failed ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
        const ids = new Set(body.sessions.map((s) => s.session_id).filter((s): s is string => !!s));
        const probe = interactiveProbe(stack, interactive);
        const deadline = Date.now() + Number(values.timeout) * 1000;
        // The batch header's settlement count is one read by _id; scanning the messages every poll would
        // load the store being measured. The scan runs once at the end, to confirm.
        const batches = stack.db.collection<{ _id: string; settled: number }>('batches');
        while (Date.now() < deadline && ((await batches.findOne({ _id: body.batch_id }))?.settled ?? 0) < ids.size) await new Promise((r) => setTimeout(r, 500));
        const total = performance.now() - started;
        const rows = await stack.db.collection<{ session_id: string }>('messages').find({ status: 'completed' }, { projection: { session_id: 1 } }).toArray();
        const done = rows.filter((r) => ids.has(r.session_id)).length;
        return { accepted, done, total, ids, sync: await probe.stop() };
      });
      const { accepted, done, total, ids, sync } = result;
      const p = summary(sync.latencies);
      console.log(`batch of ${size}: POST answered in ${(accepted / 1000).toFixed(2)} s; ${done}/${ids.size} first turns completed after ${(total / 1000).toFixed(1)} s${done < ids.size ? ' (timed out)' : ''} on ${stack.services.mongoKind}`);
      console.log(`  CPU, cores average/busiest second (average waiting for a core): ${formatCpu(cpu)}`);
      console.log(`  interactive messages/sync during the drain: n=${p.n}, p50 ${fmt(p.p50)}, p99 ${fmt(p.p99)}, max ${fmt(p.max)}, not completed ${sync.failures}`);
      // The workers write their counts twice a second.
      await new Promise((r) => setTimeout(r, 1200));
      const after = { worker: stack.roundTrips(), web: stack.webRoundTrips() };
      console.log(`  worker round trips per item: ${roundTripsPer(before.worker, after.worker, size)}`);
      console.log(`  MongoDB statements per item by filter shape, worker: ${queryShapesPer(before.worker, after.worker, size)}`);
      console.log(`  MongoDB statements per item by filter shape, web: ${queryShapesPer(before.web, after.web, size)}`);
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
