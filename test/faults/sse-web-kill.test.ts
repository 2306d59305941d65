import assert from 'node:assert/strict';
import { auditUntilSettled } from './support/audit.js';
import { Cluster } from './support/cluster.js';
import { Load, scriptedAgent } from './support/load.js';
import { ReconnectingStream } from './support/reconnecting-stream.js';
import { FULL, record } from './support/summary.js';

const SESSIONS = 20;
const CLIENTS_PER_SESSION = 5;
const MESSAGES = FULL ? 5 : 3;

describe('fault: a web process SIGKILLed under 100 SSE clients', function () {
  let c: Cluster;
  let agentId: string;
  before(async () => {
    c = await Cluster.start();
    await c.start('web-1', 'web');
    await c.start('web-2', 'web');
    await c.start('worker-1', 'worker');
    agentId = await scriptedAgent(await c.db());
  });
  after(async () => c?.close());

  it('every client reconnects elsewhere with Last-Event-ID and sees every event once, in order', async () => {
    const load = new Load({ webUrls: () => [c.url('web-2')], apiKey: c.apiKey });
    const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => load.session(agentId)));
    // Every client starts on web-1, the process about to die.
    const clients = sessions.flatMap((s) => Array.from({ length: CLIENTS_PER_SESSION }, () => new ReconnectingStream(s, () => c.webUrls(), c.apiKey)));
    clients.forEach((cl) => cl.start());
    await Promise.all(clients.map((cl) => cl.ready));
    const traffic = Promise.all(sessions.map((s) => load.messages(s, MESSAGES, 100)));
    const db = await c.db();
    for (let i = 0; i < 400 && (await db.collection('events').countDocuments({ session_id: { $in: sessions } })) < SESSIONS * MESSAGES * 2; i++) await new Promise((r) => setTimeout(r, 25));
    await c.kill('web-1', 'SIGKILL');
    const killedAt = Date.now();
    await traffic;
    const { audit } = await auditUntilSettled(db, sessions, load.acked, 60_000);
    const lengths = new Map<string, number>();
    for (const s of sessions) lengths.set(s, await db.collection('events').countDocuments({ session_id: s }));
    const deadline = Date.now() + 30_000;
    const current = (cl: ReconnectingStream, s: string) => cl.sequences.length >= lengths.get(s)!;
    while (Date.now() < deadline && !clients.every((cl, i) => current(cl, sessions[Math.floor(i / CLIENTS_PER_SESSION)]))) await new Promise((r) => setTimeout(r, 100));
    // Recovered: every client has its stream back, on the other web process.
    const recovered = Math.max(...clients.map((cl) => cl.reopenedAt)) - killedAt;
    await Promise.all(clients.map((cl) => cl.close()));

    let received = 0;
    let lost = 0;
    let duplicated = 0;
    let stuck = 0;
    clients.forEach((cl, i) => {
      const n = lengths.get(sessions[Math.floor(i / CLIENTS_PER_SESSION)])!;
      received += cl.sequences.length;
      const distinct = new Set(cl.sequences);
      duplicated += cl.sequences.length - distinct.size;
      lost += n - [...distinct].filter((q) => q >= 1 && q <= n).length;
      if (!cl.sequences.every((q, k) => k === 0 || q > cl.sequences[k - 1])) stuck++;
    });
    assert.ok(clients.every((cl) => cl.reconnects >= 1 && cl.reopenedAt >= killedAt), 'every client lost its stream and reconnected');
    assert.equal(audit.stuck, 0);
    record(`web process SIGKILLed under ${clients.length} SSE clients`, { ...audit, events: received, lost, duplicated, stuck: stuck + audit.stuck }, recovered);
  });
});
