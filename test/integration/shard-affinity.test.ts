import assert from 'node:assert/strict';
import { shardOwners } from '../../actors/runtime/rendezvous.js';
import { shardQueueName } from '../../actors/runtime/dispatcher.js';
import { SESSION } from '../../src/domain/actors/session.js';
import { shardOf } from '../../src/lib/queues/queues.js';
import { isCluster } from '../../src/lib/redis/connection.js';
import { scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';
import { lastAssignment, type Assignment } from '../support/shard-assignment.js';
import { retryingSessionTimeout, until } from '../support/wait.js';

const SHARDS = 16;

describe('shard affinity: worker processes split the session shards (issue 11)', function () {
  this.timeout(120_000);
  let h: Harness;
  const procs: RoleProcess[] = [];

  before(async () => {
    // Web only in-process: the workers are separate processes, as dynos are.
    h = await startHarness({ roles: ['web'], env: { TROUPE_SESSION_SHARDS: String(SHARDS) } });
  });
  after(async () => {
    for (const p of procs) p.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    await h?.close();
  });

  async function send(sessionId: string, n: number): Promise<void> {
    // Keyed, so a retry of a reply a loaded host was too slow to give applies nothing twice; ownership is checked below.
    const r = await retryingSessionTimeout(() => h.api(`/v1/sessions/${sessionId}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: `m${n}` }] }, headers: { 'Idempotency-Key': `${sessionId}-${n}` } }));
    assert.equal(r.status, 201, await r.clone().text());
  }

  async function completed(ids: string[], each: number): Promise<void> {
    const messages = h.running.core.db.collection('messages');
    await until(async () => (await messages.countDocuments({ session_id: { $in: ids }, status: 'completed' })) === ids.length * each, 60_000);
  }

  /** Which member processed each of the session's jobs added since `since` (BullMQ's processedBy is the worker's name, the member id). */
  async function processors(sessionId: string, since = 0): Promise<Map<string, string>> {
    const queue = h.running.core.plane.queues.queue(shardQueueName(SESSION.name, shardOf(sessionId, SHARDS)));
    const jobs = await queue.getJobs(['completed']);
    return new Map(jobs.filter((j) => j?.data?.session_id === sessionId && j.timestamp >= since).map((j) => [j.id ?? '', j.processedBy ?? '']));
  }

  it('runs each shard in one process, keeps a session on it, and hands a leaver its shards at once', async () => {
    const env = { ...h.env, TROUPE_SESSION_SHARDS: String(SHARDS) };
    const [a, b] = await Promise.all([startRoleProcess(['worker'], env), startRoleProcess(['worker'], env)]);
    procs.push(a, b);
    // Stable membership: each has assigned the shards over both of them.
    const [sa, sb] = await until(async () => {
      const both = [lastAssignment(a), lastAssignment(b)];
      return both.every((x) => x?.members === 2) ? (both as Assignment[]) : null;
    }, 20_000);
    // Disjoint and covering, and as rendezvous hashing over the two members says.
    assert.deepEqual([...sa.shards, ...sb.shards].sort((x, y) => x - y), Array.from({ length: SHARDS }, (_, i) => i));
    const owners = shardOwners([sa.member, sb.member], SHARDS);
    assert.deepEqual(sa.shards, owners.flatMap((m, s) => (m === sa.member ? [s] : [])));
    assert.ok(sa.shards.length > 0 && sb.shards.length > 0, 'both processes own shards');
    // Idle cost: only the owner's worker waits on a shard (BullMQ names its blocking connection after the queue and
    // the worker, i.e. the member id); the paused ones hold idle connections. CLIENT LIST sees one server, so not on a cluster.
    if (!isCluster(h.running.core.redis)) {
      await until(async () => {
        const blocked = String(await h.running.core.redis.call('CLIENT', 'LIST'))
          .split('\n')
          .filter((l) => / flags=\S*b/.test(l))
          .map((l) => /name=\{[^}]*:q:session-(\d+)\}\S*:w:(\S+)/.exec(l))
          .filter((m): m is RegExpExecArray => !!m);
        // Eventually (the pauses of the last change run in the background): each shard's owner waits, nobody else.
        return blocked.length === SHARDS && blocked.every(([, shard, member]) => owners[Number(shard)] === member);
      }, 15_000);
    }

    // Sessions on both processes' shards, three messages each.
    const { agentId } = await scriptedAgent(h, [{ text: 'ok' }]);
    const sessions: string[] = [];
    const per = new Map<string, number>([[sa.member, 0], [sb.member, 0]]);
    for (let i = 0; i < 60 && [...per.values()].some((n) => n < 3); i++) {
      const { id } = (await (await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST' })).json()) as { id: string };
      sessions.push(id);
      const owner = owners[shardOf(id, SHARDS)];
      per.set(owner, per.get(owner)! + 1);
    }
    assert.ok([...per.values()].every((n) => n >= 3), 'sessions on both processes');
    await Promise.all(sessions.map(async (id) => { for (let n = 1; n <= 3; n++) await send(id, n); }));
    await completed(sessions, 3);
    for (const id of sessions) {
      const by = await processors(id);
      assert.ok(by.size > 0, `jobs of ${id} kept`);
      assert.deepEqual([...new Set(by.values())], [owners[shardOf(id, SHARDS)]], `every turn of ${id} ran on its shard's owner`);
    }
    // Graceful shutdown leaves the membership at once (not after the heartbeat lapses); the other takes every shard.
    b.kill('SIGTERM');
    assert.equal(await b.exited, 0);
    assert.ok(b.lines.some((l) => l.includes('"left the worker membership"')), 'the drained worker left the membership');
    // Only jobs added from here on: one added earlier (a turn's follow-up still running on b) b may finish as it drains.
    const left = Date.now();
    await until(async () => lastAssignment(a)?.members === 1, 10_000);
    assert.equal(lastAssignment(a)!.shards.length, SHARDS);
    await Promise.all(sessions.map((id) => send(id, 4)));
    await completed(sessions, 4);
    for (const id of sessions) {
      const since = [...(await processors(id, left))];
      assert.ok(since.length > 0, `new turns of ${id}`);
      assert.deepEqual([...new Set(since.map(([, m]) => m))], [sa.member], `${id}'s turns since ran on the survivor`);
    }
  });
});
