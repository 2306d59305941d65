import assert from 'node:assert/strict';
import { join } from 'node:path';
import { shardOf } from '../../src/lib/queues/queues.js';
import { scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';
import { until } from '../support/wait.js';

const MARKER = 'poison-pill';
/** TROUPE_POISON_STALLS here: the poisoned turn may stall its worker twice, and the third start quarantines it. */
const STALLS = 2;
/** Bounds the kill-and-restart loop well past STALLS, so a missing quarantine fails instead of looping. */
const MAX_RESTARTS = STALLS + 2;
const SHARDS = 2;
/** A message of a healthy session completes within this once a worker serves its shard. */
const SERVED_MS = 10_000;

interface Message {
  status: string;
  error: string | null;
}

describe('poison work: a turn that keeps killing its worker is quarantined', function () {
  this.timeout(90_000);
  let h: Harness;
  const workers: RoleProcess[] = [];
  /** The message the first case quarantined: no later worker may start it. */
  let quarantined = '';

  before(async () => {
    // Web in-process; the session actor in child processes the test kills. A short lock makes each stall quick.
    h = await startHarness({ roles: ['web'], env: { TROUPE_ACTOR_LOCK_MS: '1000', TROUPE_POISON_STALLS: String(STALLS), TROUPE_SESSION_SHARDS: String(SHARDS) } });
  });
  after(async () => {
    for (const w of workers) w.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.exited));
    await h?.close();
  });

  async function startWorker(env: Record<string, string> = {}): Promise<RoleProcess> {
    const w = await startRoleProcess(['worker'], { ...h.env, TROUPE_TEST_POISON: MARKER, ...env }, { entry: join(__dirname, '../support/worker-process.js') });
    workers.push(w);
    return w;
  }

  async function send(sid: string, text: string, key = h.apiKey): Promise<string> {
    const res = await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text }] }, headers: { Authorization: `Bearer ${key}` } });
    assert.equal(res.status, 201, await res.clone().text());
    return ((await res.json()) as { message: { id: string } }).message.id;
  }

  async function message(sid: string, mid: string, key = h.apiKey): Promise<Message> {
    return (await (await h.api(`/v1/sessions/${sid}/messages/${mid}`, { headers: { Authorization: `Bearer ${key}` } })).json()) as Message;
  }

  async function session(agentId: string, key = h.apiKey): Promise<string> {
    const res = await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: {}, headers: { Authorization: `Bearer ${key}` } });
    assert.equal(res.status, 201);
    return ((await res.json()) as { id: string }).id;
  }

  const poisoned = (w: RoleProcess, mid: string) => w.lines.some((l) => l === `poisoned ${mid}`);

  it('fails the message with processing_budget_exceeded, keeps the session usable, and serves another org', async () => {
    const { agentId } = await scriptedAgent(h, [{ text: 'fine' }]);
    const otherOrg = await h.running.core.stores.orgs.create('poison-other-org');
    const { key: otherKey } = await h.running.core.stores.apiKeys.create(otherOrg._id, 'api');
    const { agentId: otherAgent } = await scriptedAgent(h, [{ text: 'other fine' }], { orgName: 'poison-other-org' });

    let worker = await startWorker();
    const sid = await session(agentId);
    const mid = await send(sid, `please swallow the ${MARKER}`);
    // Each start of the poisoned turn freezes its worker at 100% CPU; a supervisor would kill and restart it.
    let kills = 0;
    for (let i = 0; i <= MAX_RESTARTS; i++) {
      const w = worker;
      const seen = await until(async () => (poisoned(w, mid) ? 'poisoned' : (await message(sid, mid)).status === 'failed' ? 'failed' : null), 20_000);
      if (seen === 'failed') break;
      w.kill('SIGKILL');
      await w.exited;
      kills++;
      worker = await startWorker();
    }
    const failed = await message(sid, mid);
    assert.equal(failed.status, 'failed', `after ${kills} kills the message is ${failed.status}`);
    assert.match(failed.error ?? '', /^processing_budget_exceeded: /);
    assert.equal(kills, STALLS, 'quarantined on the start after the last allowed stall, not run again');

    // The ledger tells the same, once: running, then failed.
    const events = (await (await h.api(`/v1/sessions/${sid}/events?limit=100`)).json()) as { events: { type: string; data: { message_id?: string; to?: string; error?: string } }[] };
    const statuses = events.events.filter((e) => e.type === 'message.status_changed' && e.data.message_id === mid).map((e) => e.data.to);
    assert.deepEqual(statuses, ['queued', 'running', 'failed']);

    // The session takes its next message, and another org's session is served, by the worker that quarantined.
    const started = Date.now();
    const next = await send(sid, 'and now something harmless');
    const otherSid = await session(otherAgent, otherKey);
    const otherMid = await send(otherSid, 'hello', otherKey);
    await until(async () => (await message(sid, next)).status === 'completed' && (await message(otherSid, otherMid, otherKey)).status === 'completed', SERVED_MS);
    const served = Date.now() - started;

    assert.ok(served < SERVED_MS, `served in ${served} ms`);
    quarantined = mid;
    worker.kill('SIGTERM');
    await worker.exited;
  });

  it('quarantines a turn that runs past its time budget, and the other sessions of its shard are served', async () => {
    const { agentId } = await scriptedAgent(h, [{ text: 'fine' }]);
    // The turn waits for good while its process lives and renews its lock: only the budget ends it.
    const worker = await startWorker({ TROUPE_TEST_POISON_MODE: 'hang', TROUPE_TURN_BUDGET_MS: '1500' });
    const sid = await session(agentId);
    // A session of the same shard: one turn runs per shard at a time, so a turn that never ends would stop it too.
    let neighbour = '';
    for (let i = 0; i < 40 && !neighbour; i++) {
      const other = await session(agentId);
      if (shardOf(other, SHARDS) === shardOf(sid, SHARDS)) neighbour = other;
    }
    assert.ok(neighbour, 'a session on the same shard');
    const mid = await send(sid, `please swallow the ${MARKER}`);
    const started = Date.now();
    const waiting = await send(neighbour, 'hello');
    await until(async () => (await message(neighbour, waiting)).status === 'completed', SERVED_MS);
    const failed = await until(async () => {
      const m = await message(sid, mid);
      return m.status === 'failed' ? m : null;
    }, SERVED_MS);
    assert.match(failed.error ?? '', /^processing_budget_exceeded: processing this message ran past its 1500 ms budget/);
    assert.ok(Date.now() - started < SERVED_MS);
    const next = await send(sid, 'and now something harmless');
    await until(async () => (await message(sid, next)).status === 'completed', SERVED_MS);
    // This worker is also a restart after the first case: it never started the message quarantined there.
    assert.ok(quarantined && !poisoned(worker, quarantined), 'a restart does not run quarantined work again');
  });
});
