/**
 * Ledger benchmark (issue 4). Starts Redis + the MongoDB-wire server, a web
 * process and a worker process, then measures from a client on this machine:
 *  - end-to-end ledger throughput (append -> visible on SSE) across N sessions
 *  - user.message POST latency p50/p99
 *  - SSE delivery latency from append to client p50/p99
 *  - RSS of the web process holding M idle SSE streams
 * MONGODB_URL runs it against that server; TROUPE_LOCAL_MONGO picks the local one.
 * Usage: node dist/bench/ledger/run.js [--sessions 1000] [--streams 5000] [--concurrency 64] [--workers 1]
 * Figures, not pass/fail.
 */
import { parseArgs } from 'node:util';
import { Agent, setGlobalDispatcher } from 'undici';
import { fmt, summary } from '../support/percentiles.js';
import { pool, scriptedAgent, startStack, withServerCpu } from '../support/stack.js';

setGlobalDispatcher(new Agent({ connections: null, pipelining: 0, keepAliveTimeout: 60_000 }));

const { values } = parseArgs({ options: { sessions: { type: 'string', default: '1000' }, streams: { type: 'string', default: '5000' }, concurrency: { type: 'string', default: '64' }, workers: { type: 'string', default: '1' } } });
const SESSIONS = Number(values.sessions);
const STREAMS = Number(values.streams);
const CONCURRENCY = Number(values.concurrency);

async function rssOf(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^troupe_process_resident_memory_bytes\S* (\d+)/m.exec(text)?.[1] ?? NaN);
}

/** Reads an SSE stream, calling onEvent(sequence, created_at) per record. */
async function stream(url: string, key: string, onEvent: (seq: number, createdAt: number) => void, signal: AbortSignal): Promise<void> {
  const res = await fetch(url, { headers: { Authorization: `Bearer ${key}` }, signal });
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = '';
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += dec.decode(value, { stream: true });
        let idx;
        while ((idx = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, idx);
          buf = buf.slice(idx + 2);
          const data = /^data: (.*)$/m.exec(block);
          if (data) {
            const ev = JSON.parse(data[1]) as { sequence_number: number; created_at: string };
            onEvent(ev.sequence_number, Date.parse(ev.created_at));
          }
        }
      }
    } catch {
      /* aborted */
    }
  })();
}

async function main(): Promise<void> {
  const stack = await startStack({ workers: Number(values.workers), env: { TROUPE_SESSION_SHARDS: '64' } });
  const { base, apiKey } = stack;
  const abort = new AbortController();
  try {
    const agent = { _id: await scriptedAgent(stack.db, [{ text: 'ok' }]) };
    const auth = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
    const sessions: string[] = [];
    await pool(Array.from({ length: SESSIONS }, (_, i) => i), CONCURRENCY, async () => {
      const r = await fetch(`${base}/v1/agents/${agent._id}/sessions`, { method: 'POST', headers: auth, body: '{}' });
      sessions.push(((await r.json()) as { id: string }).id);
    });
    const delivery: number[] = [];
    let seen = 0;
    const EVENTS_PER_MESSAGE = 7;
    const expected = SESSIONS * EVENTS_PER_MESSAGE;
    let allSeen!: () => void;
    const finished = new Promise<void>((r) => (allSeen = r));
    await pool(sessions, 200, (id) => stream(`${base}/v1/sessions/${id}/stream`, apiKey, (_seq, createdAt) => {
      delivery.push(Date.now() - createdAt);
      if (++seen === expected) allSeen();
    }, abort.signal));
    const post: number[] = [];
    const started = Date.now();
    const { cpu } = await withServerCpu(stack, async () => {
      await pool(sessions, CONCURRENCY, async (id) => {
        const t = performance.now();
        const r = await fetch(`${base}/v1/sessions/${id}/events`, { method: 'POST', headers: auth, body: JSON.stringify({ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }) });
        await r.arrayBuffer();
        post.push(performance.now() - t);
      });
      await Promise.race([finished, new Promise((r) => setTimeout(r, 300_000))]);
    });
    const seconds = (Date.now() - started) / 1000;
    abort.abort();
    const p = summary(post);
    const d = summary(delivery);
    console.log(`sessions=${SESSIONS} events seen on SSE=${seen}/${expected} in ${seconds.toFixed(1)} s -> ${(seen / seconds).toFixed(0)} events/s`);
    console.log(`user.message POST latency (concurrency ${CONCURRENCY}): p50 ${fmt(p.p50)}, p99 ${fmt(p.p99)}, max ${fmt(p.max)}`);
    console.log(`SSE delivery latency append->client: p50 ${fmt(d.p50)}, p99 ${fmt(d.p99)}, max ${fmt(d.max)}`);
    if (cpu) console.log(`MongoDB-wire server (${stack.services.mongoKind}) CPU while messages ran: ${cpu.average.toFixed(2)} cores on average, ${cpu.peak.toFixed(2)} in the busiest second`);
    const idle = new AbortController();
    const rssBefore = await rssOf(base);
    await pool(Array.from({ length: STREAMS }, (_, i) => sessions[i % sessions.length]), 200, (id) => stream(`${base}/v1/sessions/${id}/stream?last_event_id=${id}:${EVENTS_PER_MESSAGE}`, apiKey, () => undefined, idle.signal));
    await new Promise((r) => setTimeout(r, 2000));
    const rssAfter = await rssOf(base);
    console.log(`web RSS with ${STREAMS} idle SSE streams: ${(rssAfter / 2 ** 20).toFixed(0)} MiB (before opening them: ${(rssBefore / 2 ** 20).toFixed(0)} MiB)`);
    idle.abort();
  } finally {
    abort.abort();
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
