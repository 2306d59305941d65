import assert from 'node:assert/strict';
import type { Db } from 'mongodb';
import { newId } from '../../src/domain/ids.js';
import type { ToolDef } from '../../src/domain/agent.js';
import { AgentStore } from '../../src/store/agents.js';
import { Cluster } from './support/cluster.js';

const SESSIONS = 4;

/** An agent whose model calls an always_ask external tool once, then answers. */
async function askingAgent(db: Db): Promise<string> {
  const org = await db.collection<{ _id: string; name: string }>('orgs').findOne({ name: 'default' });
  if (!org) throw new Error('no default org yet: start a role first');
  const tool: ToolDef = { name: 'deploy', kind: 'external', path: 'tools/deploy.json', timeout_seconds: 120, description: null, input_schema: null, output_schema: null, permission: 'always_ask' };
  const llm = [{ id: 'main', provider: 'scripted' as const, script: 'script.json' }];
  const manifest = { name: 'ask', sdk: 'troupe-js@1' as const, entrypoint: 'agent.js:agent', sandbox: { secrets: [], internet_access: false }, custom_tools: [], llm_options: llm };
  const scripts = { main: { turns: [{ tool_calls: [{ name: 'deploy', arguments: { env: 'prod' }, id: 'call_d' }] }, { text: 'deployed' }] } };
  const { agent } = await new AgentStore(db).create({ id: newId('agent'), orgId: org._id, name: 'ask' }, { id: newId('version'), snapshotId: newId('snapshot'), content: { manifest, llm_options: llm, tools: [tool], scripts, entrypoint: manifest.entrypoint } });
  return agent._id;
}

/**
 * Issue #33, item 5: a kill -9 of the worker while a confirmation is pending, and again while the answers are
 * being taken, loses nothing and runs nothing twice. The confirmation waits in the ledger only, so a replacement
 * worker takes the answers; each call is then requested exactly once and its message completes.
 */
describe('fault: a worker SIGKILLed while tool confirmations wait and while they are answered', function () {
  this.timeout(60_000);
  let c: Cluster;
  before(async () => {
    c = await Cluster.start();
    await c.start('web-1', 'web');
    await c.start('worker-1', 'worker');
  });
  after(async () => c?.close());

  it(`every confirmation survives, is recorded once and requests its call once (${SESSIONS} sessions)`, async () => {
    const db = await c.db();
    const agentId = await askingAgent(db);
    const api = (path: string, init: RequestInit & { json?: unknown } = {}) =>
      fetch(c.webUrls()[0] + path, { ...init, headers: { Authorization: `Bearer ${c.apiKey}`, 'Content-Type': 'application/json', ...(init.headers as Record<string, string>) }, body: init.json === undefined ? init.body : JSON.stringify(init.json) });
    const sessions: { sid: string; mid: string }[] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const s = (await (await api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: {} })).json()) as { id: string };
      const sent = (await (await api(`/v1/sessions/${s.id}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: 'ship' }] } })).json()) as { message: { id: string } };
      sessions.push({ sid: s.id, mid: sent.message.id });
    }
    const count = (type: string) => db.collection('events').countDocuments({ session_id: { $in: sessions.map((s) => s.sid) }, type });
    for (let i = 0; i < 400 && (await count('tool.confirmation_requested')) < SESSIONS; i++) await new Promise((r) => setTimeout(r, 25));
    assert.equal(await count('tool.confirmation_requested'), SESSIONS);

    // Killed while every confirmation waits; its replacement is killed while the answers go in.
    await c.kill('worker-1', 'SIGKILL');
    await c.start('worker-2', 'worker');
    const answer = async ({ sid, mid }: { sid: string; mid: string }) => {
      // A client's retry loop: same Idempotency-Key until a 201; a 409 means an earlier try was recorded but its answer lost.
      for (let i = 0; i < 80; i++) {
        const res = await api(`/v1/sessions/${sid}/events`, { method: 'POST', headers: { 'Idempotency-Key': `allow-${sid}` }, json: { type: 'user.tool_confirmation', message_id: mid, tool_call_id: 'call_d', result: 'allow' } }).catch(() => null);
        const status = res?.status ?? 0;
        await res?.arrayBuffer();
        if (status === 201 || status === 409) return status;
        await new Promise((r) => setTimeout(r, 250));
      }
      throw new Error(`no answer taken for ${sid}`);
    };
    const answers = Promise.all(sessions.map(answer));
    await c.kill('worker-2', 'SIGKILL');
    await c.start('worker-3', 'worker');
    await answers;
    for (let i = 0; i < 400 && (await count('tool.call_requested')) < SESSIONS; i++) await new Promise((r) => setTimeout(r, 50));

    for (const { sid, mid } of sessions) {
      const res = await api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'tool.result_submitted', message_id: mid, tool_call_id: 'call_d', result: { ok: true } } });
      assert.equal(res.status, 201, await res.text());
    }
    const done = () => db.collection('messages').countDocuments({ session_id: { $in: sessions.map((s) => s.sid) }, status: 'completed' });
    for (let i = 0; i < 400 && (await done()) < SESSIONS; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(await done(), SESSIONS, 'every message completed');
    for (const type of ['tool.confirmation_requested', 'user.tool_confirmation', 'tool.call_requested', 'tool.result_submitted']) assert.equal(await count(type), SESSIONS, `${type} once per session`);
    for (const { sid } of sessions) {
      const seqs = (await db.collection<{ sequence_number: number }>('events').find({ session_id: sid }).sort({ sequence_number: 1 }).toArray()).map((e) => e.sequence_number);
      assert.deepEqual(seqs, seqs.map((_, i) => i + 1), `the ledger of ${sid} has no gap or duplicate`);
    }
    await c.kill('worker-3', 'SIGTERM');
  });
});
