import assert from 'node:assert/strict';
import type { Db } from 'mongodb';
import { newId } from '../../src/domain/ids.js';
import type { LlmOption } from '../../src/domain/agent.js';
import { AgentStore } from '../../src/store/agents.js';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { until } from '../support/wait.js';
import { auditUntilSettled } from './support/audit.js';
import { Cluster } from './support/cluster.js';

const SESSIONS = 4;

/** A reply that streams for about 20 s at the fake's event delay: it is interrupted, never waited out. */
const LONG = Array.from({ length: 200 }, (_, i) => `w${i}`).join(' ');

async function fakeAgent(db: Db, fakeBase: string): Promise<string> {
  const org = (await db.collection<{ _id: string; name: string }>('orgs').findOne({ name: 'default' }))!;
  const llm: LlmOption[] = [{ id: 'main', provider: 'openai', model: 'm', base_url: fakeBase }];
  const manifest = { name: 'busy', sdk: 'troupe-js@1' as const, entrypoint: 'agent.js:agent', sandbox: { secrets: [], internet_access: false }, custom_tools: [], llm_options: llm };
  const { agent } = await new AgentStore(db).create(
    { id: newId('agent'), orgId: org._id, name: 'busy' },
    { id: newId('version'), snapshotId: newId('snapshot'), content: { manifest, llm_options: llm, tools: [], scripts: {}, entrypoint: manifest.entrypoint } },
  );
  return agent._id;
}

/**
 * Issue #33 item 2 under a kill -9: with a turn streaming in each session, a message sent with `on_busy`
 * `interrupt` races a SIGKILL of the only worker. Once a replacement runs, each ledger is gapless with nothing
 * twice, the interrupted message ended `cancelled` once (naming the new one), and the new one completed once.
 */
describe('fault: a worker SIGKILLed while on_busy interrupt takes over a running turn', function () {
  this.timeout(60_000);
  let c: Cluster;
  let fake: FakeLlmUpstream;
  before(async () => {
    fake = await FakeLlmUpstream.start();
    fake.eventDelayMs = 100;
    fake.reply = (body) => {
      const users = ((body.messages ?? []) as { role: string; content: unknown }[]).filter((m) => m.role === 'user');
      return { text: JSON.stringify(users.at(-1)?.content ?? '').includes('slow') ? LONG : 'done' };
    };
    c = await Cluster.start();
    await c.start('web-1', 'web');
    await c.start('worker-1', 'worker');
  });
  after(async () => {
    await c?.close();
    await fake?.close();
  });

  it(`each interrupted message is cancelled once and each new one completes once (${SESSIONS} sessions)`, async () => {
    const db = await c.db();
    const agentId = await fakeAgent(db, fake.openaiBase);
    const api = (path: string, json: unknown, headers: Record<string, string> = {}) =>
      fetch(c.webUrls()[0] + path, { method: 'POST', headers: { Authorization: `Bearer ${c.apiKey}`, 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(json) });
    const sessions: { sid: string; slow: string }[] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const s = (await (await api(`/v1/agents/${agentId}/sessions`, { llm_api_key: 'sk-fake' })).json()) as { id: string };
      const sent = (await (await api(`/v1/sessions/${s.id}/events`, { type: 'user.message', content: [{ type: 'text', text: 'slow one' }] })).json()) as { message: { id: string } };
      sessions.push({ sid: s.id, slow: sent.message.id });
    }
    const sids = sessions.map((s) => s.sid);
    await until(async () => (await db.collection('messages').countDocuments({ session_id: { $in: sids }, status: 'running' })) === SESSIONS, 15_000);

    // A client's retry loop: the same Idempotency-Key until the message is taken (201).
    const interrupt = async (sid: string) => {
      for (let i = 0; i < 80; i++) {
        const res = await api(`/v1/sessions/${sid}/events`, { type: 'user.message', content: [{ type: 'text', text: 'change of plan' }], on_busy: 'interrupt' }, { 'Idempotency-Key': `interrupt-${sid}` }).catch(() => null);
        const body = res ? ((await res.json().catch(() => null)) as { message?: { id: string } } | null) : null;
        if (res?.status === 201 && body?.message) return body.message.id;
        await new Promise((r) => setTimeout(r, 250));
      }
      throw new Error(`the interrupt was never taken for ${sid}`);
    };
    // All but one are sent at once, and the worker dies as soon as the first is in the ledger: the others are taken
    // mid-way or not yet, and the first's work (the abort, the new message's start) may be cut short. The last
    // is sent while no worker runs.
    const interrupts = () => db.collection('events').countDocuments({ session_id: { $in: sids }, type: 'user.message' });
    const early = sessions.slice(0, -1).map((s) => interrupt(s.sid));
    await until(async () => (await interrupts()) > SESSIONS, 10_000);
    await c.kill('worker-1', 'SIGKILL');
    const late = sessions.slice(-1).map((s) => interrupt(s.sid));
    await c.start('worker-2', 'worker');
    const next = await Promise.all([...early, ...late]);

    const acked = new Map<string, string>(sessions.flatMap((s, i) => [[s.slow, s.sid], [next[i], s.sid]] as [string, string][]));
    const { audit } = await auditUntilSettled(db, sids, acked, 30_000);
    assert.deepEqual(audit.problems, [], 'gapless ledgers, nothing twice, nothing lost or stuck');
    assert.equal(audit.failed, SESSIONS, 'exactly the interrupted messages ended other than completed');
    const events = await db.collection<{ session_id: string; message_id: string | null; type: string; data_json: string }>('events').find({ session_id: { $in: sids }, type: 'message.status_changed' }).toArray();
    sessions.forEach(({ sid, slow }, i) => {
      const ends = (mid: string) => events.filter((e) => e.session_id === sid && e.message_id === mid).map((e) => JSON.parse(e.data_json) as { to: string; interrupted_by?: string; on_busy?: string }).filter((d) => ['completed', 'failed', 'cancelled'].includes(d.to));
      assert.deepEqual(ends(slow).map((d) => [d.to, d.interrupted_by, d.on_busy]), [['cancelled', next[i], 'interrupt']], `${sid}: the interrupted message is cancelled once, by the new one`);
      assert.deepEqual(ends(next[i]).map((d) => d.to), ['completed'], `${sid}: the new message completes once`);
    });
    await c.kill('worker-2', 'SIGTERM');
  });
});
