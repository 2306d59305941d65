import assert from 'node:assert/strict';
import { SESSION, sessionCommand } from '../../src/domain/actors/session.js';
import { Dispatcher, shardQueueName } from '../../actors/runtime/dispatcher.js';
import { shardOf } from '../../src/lib/queues/queues.js';
import { defineActor } from '../../actors/runtime/actor.js';
import { actorAddress } from '../../src/domain/actors/address.js';
import { Asker } from '../../actors/runtime/asker.js';
import { ActorRuntime } from '../../actors/runtime/runtime.js';
import { SYSTEM_ACTOR } from '../../src/domain/ledger.js';
import { toEventDoc } from '../../src/store/ledger.js';
import { LedgerWriter } from '../../src/store/ledger-writer.js';
import { MessageStore } from '../../src/store/messages.js';
import { ProjectionWriter } from '../../src/store/projection-writer.js';
import { startHarness, type Harness } from '../support/harness.js';
import { until } from '../support/wait.js';

describe('actor runtime', function () {
  this.timeout(60_000);
  let h: Harness;

  before(async () => {
    h = await startHarness({ roles: ['worker'], env: { TROUPE_SESSION_SHARDS: '4' } });
  });
  after(async () => h?.close());

  /** The messages published on `channel` from now on, in order; `stop` unsubscribes. */
  async function collect(channel: string): Promise<{ got: string[]; stop(): void }> {
    const sub = h.running.core.redisFor('subscriber', `collect-${channel}`);
    const got: string[] = [];
    sub.on('message', (_c: string, m: string) => got.push(m));
    await sub.subscribe(channel);
    return { got, stop: () => sub.disconnect() };
  }

  const concurrency = async () => {
    const { queues } = h.running.core.plane;
    return Promise.all([0, 1, 2, 3].map(async (i) => (await queues.queue(shardQueueName(SESSION.name, i)).getGlobalConcurrency()) ?? null));
  };

  it('keeps one turn per shard when Redis forgets the setting (a restart without persistence)', async () => {
    assert.deepEqual(await concurrency(), [1, 1, 1, 1]);
    const redis = h.running.core.redis;
    // What a Redis restart without persistence leaves: no meta key, then a reconnect.
    for (let i = 0; i < 4; i++) await h.running.core.plane.queues.queue(shardQueueName(SESSION.name, i)).removeGlobalConcurrency();
    assert.deepEqual(await concurrency(), [null, null, null, null], 'the setting is gone');
    redis.disconnect(true);
    assert.deepEqual(await until(async () => {
      const c = await concurrency().catch(() => null);
      return c && c.every((n) => n === 1) && c;
    }, 10_000), [1, 1, 1, 1]);
  });

  it('appends many turns in one ordered insert: a conflict fails only its own turn, the later ones still land', async () => {
    const { ledger } = h.running.core.stores;
    const writer = new LedgerWriter(ledger);
    const now = new Date();
    const turn = (sid: string, from: number, n: number) => Array.from({ length: n }, (_, i) => toEventDoc('org_t', sid, from + i, { type: 'session.status_changed', message_id: null, source: 'platform', actor: SYSTEM_ACTOR, data: { from: 'idle', to: 'running' } }, now, {}));
    const [a, b, c] = ['ses_lw_a', 'ses_lw_b', 'ses_lw_c'];
    await ledger.append(turn(b, 1, 1));
    // Submitted in one tick, so they share a flush; b's turn collides with the row above.
    const results = await Promise.allSettled([writer.append(turn(a, 1, 2)), writer.append(turn(b, 1, 2)), writer.append(turn(c, 1, 3))]);
    assert.equal(results[0].status, 'fulfilled');
    assert.equal(results[1].status, 'rejected');
    assert.equal((results[1] as PromiseRejectedResult).reason.code, 11000);
    assert.equal(results[2].status, 'fulfilled');
    const count = (sid: string) => h.running.core.db.collection('events').countDocuments({ session_id: sid });
    assert.deepEqual([await count(a), await count(b), await count(c)], [2, 1, 3]);
  });

  it('writes the projections of many turns in one flush per collection', async () => {
    const { sessions, messages } = h.running.core.stores;
    const writer = new ProjectionWriter(sessions, messages);
    const ids = ['ses_pw_1', 'ses_pw_2', 'ses_pw_3'];
    await sessions.col.insertMany(ids.map((id) => ({ _id: id, org_id: 'org_t', status: 'idle', last_sequence: 0 }) as never));
    // What a turn's asker would read when answered: its message is already there.
    const answered: Promise<string | undefined>[] = [];
    await Promise.all(ids.map((id, i) => writer.save('org_t', { id, status: 'running', last_sequence: i + 1, last_message_id: `msg_${id}`, last_message_status: 'queued', running_message_id: null, queued_message_ids: [`msg_${id}`], recent_commands: [] }, [
      { id: `msg_${id}`, session_id: id, sequence_number: 1, parts: [], metadata: null, status: 'queued', attempt: 1, model_calls: 0, pending_tool_calls: [], output: { parts: [] }, error: null, created_at: '', completed_at: null },
    ], () => answered.push(messages.get('org_t', id, `msg_${id}`).then((m) => m?.status)))));
    assert.deepEqual(await Promise.all(answered), ['queued', 'queued', 'queued']);
    for (const [i, id] of ids.entries()) {
      const s = await sessions.byId(id);
      assert.equal(s?.last_sequence, i + 1);
      assert.equal((await messages.get('org_t', id, `msg_${id}`))?.status, 'queued');
    }
  });

  it('writes the messages before the session, so a failed flush never leaves a session noting a command whose messages are missing', async () => {
    const { sessions } = h.running.core.stores;
    // A messages collection (in a database of its own) that refuses the write: a unique index the second message breaks,
    // standing in for a process that dies between the two writes.
    const scratch = h.running.core.mongo.db(`${h.running.core.db.databaseName}_pw_order`);
    const refusing = new MessageStore(scratch);
    await refusing.col.createIndex({ session_id: 1 }, { unique: true, name: 'one_message_per_session' });
    const writer = new ProjectionWriter(sessions, refusing);
    const id = 'ses_pw_order';
    await sessions.col.insertOne({ _id: id, org_id: 'org_t', status: 'idle', last_sequence: 0 } as never);
    const message = (n: number) => ({ id: `msg_${id}_${n}`, session_id: id, sequence_number: n, parts: [], metadata: null, status: 'queued' as const, attempt: 1, model_calls: 0, pending_tool_calls: [], output: { parts: [] }, error: null, created_at: '', completed_at: null });
    const state = { id, status: 'running' as const, last_sequence: 3, last_message_id: message(2).id, last_message_status: 'queued' as const, running_message_id: null, queued_message_ids: [message(1).id, message(2).id], recent_commands: [{ id: 'cmd_1', seq: 1 }] };
    let answered = false;
    await assert.rejects(writer.save('org_t', state as never, [message(1), message(2)] as never, () => (answered = true)), { code: 11000 });
    assert.equal((await sessions.byId(id))?.last_sequence, 0, 'the session was not written after its messages failed');
    assert.equal(answered, false, 'no answer before the messages are written');
    await scratch.dropDatabase();
  });

  it('hands off the reply, publications and sends in one go while the handler still runs, and delivers only the rest when it returns', async () => {
    const { queues, dispatcher, hub } = h.running.core.plane;
    const runtime = new ActorRuntime({ queues, dispatcher, log: h.running.core.log, lockMs: 5000 });
    const asker = new Asker(hub, dispatcher, 'troupe-test-early:');
    await asker.start();
    const { got, stop } = await collect('troupe-test-handoff');
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let finished = false;
    const address = actorAddress('early-reply-test', { attempts: 1 });
    const target = actorAddress('handoff-target-test', { attempts: 1 });
    const send = (id: string) => ({ to: target, name: 'test', data: { id }, job_id: id, delay_ms: 60_000 });
    await runtime.start(defineActor<{ n: number }, null>({
      address,
      handle: async (ctx, m) => {
        ctx.handOff({ reply: { early: m.n }, publish: [{ channel: 'troupe-test-handoff', payload: 'early' }], sends: [send('handoff-early')] });
        await held;
        finished = true;
        return { reply: { late: m.n }, publish: [{ channel: 'troupe-test-handoff', payload: 'rest' }], sends: [send('handoff-rest')] };
      },
    }), null);
    try {
      const answer = await asker.ask<{ early?: number; late?: number }>({ to: address, name: 'test', data: { n: 7 }, job_id: 'early-7' });
      assert.deepEqual(answer, { early: 7 });
      await until(async () => got.length === 1);
      assert.deepEqual(got, ['early']);
      assert.ok(await queues.queue(target.name).getJob('handoff-early'), 'the early send was added');
      assert.equal(await queues.queue(target.name).getJob('handoff-rest'), undefined);
      assert.equal(finished, false, 'all of it came before the handler finished');
      release();
      await until(async () => got.length === 2);
      assert.deepEqual(got, ['early', 'rest'], 'the early part is not published again');
      assert.ok(await queues.queue(target.name).getJob('handoff-rest'), 'the rest was added when the handler returned');
    } finally {
      release();
      await runtime.close();
      await asker.close();
      stop();
      await queues.queue(address.name).obliterate({ force: true });
      await queues.queue(target.name).obliterate({ force: true });
    }
    assert.equal(finished, true);
  });

  it('quarantines, never handles, a message that stalled its worker poisonStalls times or overran its budget', async () => {
    const { queues, dispatcher } = h.running.core.plane;
    const runtime = new ActorRuntime({ queues, dispatcher, log: h.running.core.log, lockMs: 5000, poisonStalls: 2 });
    const channel = 'troupe-test-quarantine';
    const { got, stop } = await collect(channel);
    const address = actorAddress('quarantine-test', { attempts: 1 });
    const queue = queues.queue(address.name);
    const handled: string[] = [];
    const quarantined: [string, string][] = [];
    const send = (id: string, hang = false) => dispatcher.send([{ to: address, name: 'test', data: { id, hang, reply_to: { channel, request_id: id } }, job_id: id }]);
    const reply = async (n: number) => (await until(async () => got.length >= n && got), JSON.parse(got[n - 1]) as { ok: boolean; status?: number; error?: { code: string }; value?: unknown });
    try {
      // What two deaths of its worker mid-message leave on the job: BullMQ's stall count, kept in Redis.
      await send('poison');
      await queues.producer.hset(queue.toKey('poison'), 'stc', '2');
      await runtime.start(defineActor<{ id: string; hang: boolean }, null>({
        address,
        handle: async (_ctx, m) => {
          handled.push(m.id);
          if (m.hang) await new Promise(() => undefined);
          return { reply: m.id };
        },
        onQuarantine: async (_ctx, m, error) => (quarantined.push([m.id, error]), {}),
      }), null, { budgetMs: 300 });
      const poisoned = await reply(1);
      assert.deepEqual([poisoned.ok, poisoned.status, poisoned.error?.code], [false, 422, 'processing_budget_exceeded']);
      assert.deepEqual(handled, [], 'the handler never ran');
      assert.equal(quarantined[0][0], 'poison');
      assert.match(quarantined[0][1], /^processing_budget_exceeded: processing this message stopped its worker 2 times/);
      assert.ok(await (await queue.getJob('poison'))!.isCompleted(), 'done with: no retry, no restart runs it');
      await send('slow', true);
      const slow = await reply(2);
      assert.deepEqual([slow.ok, slow.error?.code], [false, 'processing_budget_exceeded']);
      assert.match(quarantined[1][1], /ran past its 300 ms budget/);
      await send('fine');
      assert.deepEqual((await reply(3)).value, 'fine', 'the queue goes on');
      assert.deepEqual(handled, ['slow', 'fine']);
    } finally {
      await runtime.close();
      stop();
      await queue.obliterate({ force: true });
    }
  });

  it('delivers a hand-off that could not go out with what the handler returns, in order and once', async () => {
    const { queues, dispatcher, hub } = h.running.core.plane;
    // A Redis hiccup on the hand-off's pipeline only.
    let refused = 0;
    const flaky = new (class extends Dispatcher {
      override async deliver(publish: Parameters<Dispatcher['deliver']>[0], sends: Parameters<Dispatcher['deliver']>[1]): Promise<void> {
        if (!refused && publish.some((p) => p.payload === 'early')) {
          refused++;
          throw new Error('connection lost');
        }
        return super.deliver(publish, sends);
      }
    })(queues, dispatcher.shards);
    const runtime = new ActorRuntime({ queues, dispatcher: flaky, log: h.running.core.log, lockMs: 5000 });
    const asker = new Asker(hub, dispatcher, 'troupe-test-refused:');
    await asker.start();
    const address = actorAddress('refused-handoff-test', { attempts: 1 });
    const target = actorAddress('refused-target-test', { attempts: 1 });
    const send = (id: string) => ({ to: target, name: 'test', data: { id }, job_id: id, delay_ms: 60_000 });
    const channel = 'troupe-test-handoff-refused';
    const { got, stop } = await collect(channel);
    await runtime.start(defineActor<{ n: number }, null>({
      address,
      handle: async (ctx, m) => {
        ctx.handOff({ reply: { early: m.n }, publish: [{ channel, payload: 'early' }], sends: [send('refused-early')] });
        return { publish: [{ channel, payload: 'rest' }], sends: [send('refused-rest')] };
      },
    }), null);
    try {
      assert.deepEqual(await asker.ask({ to: address, name: 'test', data: { n: 3 }, job_id: 'refused-3' }), { early: 3 }, 'the handed-off answer, given with the rest');
      await until(async () => got.length === 2);
      assert.equal(refused, 1);
      assert.deepEqual(got, ['early', 'rest']);
      for (const id of ['refused-early', 'refused-rest']) assert.ok(await queues.queue(target.name).getJob(id), `${id} was added`);
    } finally {
      await runtime.close();
      await asker.close();
      stop();
      await queues.queue(address.name).obliterate({ force: true });
      await queues.queue(target.name).obliterate({ force: true });
    }
  });

  it("remembers a sent job id for the address's rememberMs, after its finished job was dropped; without it the id runs again", async () => {
    const { queues, dispatcher } = h.running.core.plane;
    const runtime = new ActorRuntime({ queues, dispatcher, log: h.running.core.log, lockMs: 5000 });
    const runs: string[] = [];
    const remembering = actorAddress('remember-test', { attempts: 1, rememberMs: 60_000 });
    const forgetting = actorAddress('forget-test', { attempts: 1 });
    for (const address of [remembering, forgetting]) {
      await runtime.start(defineActor<{ id: string }, null>({ address, handle: async (_ctx, m) => (runs.push(`${address.name}:${m.id}`), {}) }), null);
    }
    const send = (address: typeof remembering) => dispatcher.send([{ to: address, name: 'test', data: { id: 'once' }, job_id: 'event-1' }]);
    try {
      await Promise.all([send(remembering), send(forgetting)]);
      await until(async () => runs.length === 2);
      // What the kept jobs' age or count limit does in time (removeJobsByMaxAge/-MaxCount: the job's keys and its
      // place in the completed set go, a deduplication key stays). Not queue.clean, which drops that key too.
      for (const address of [remembering, forgetting]) {
        const queue = queues.queue(address.name);
        await until(async () => (await queue.getJobCounts('completed')).completed === 1);
        const redis = queues.producer;
        await redis.zrem(queue.keys.completed, 'event-1');
        await redis.del(queue.toKey('event-1'), `${queue.toKey('event-1')}:logs`);
      }
      // A replay's hand-off: the same ids again.
      await Promise.all([send(remembering), send(forgetting)]);
      await until(async () => runs.length === 3);
      assert.deepEqual(await queues.queue(remembering.name).getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'completed'), { waiting: 0, prioritized: 0, active: 0, delayed: 0, completed: 0 }, 'the remembered id added no job');
      assert.deepEqual(runs.sort(), ['forget-test:once', 'forget-test:once', 'remember-test:once']);
    } finally {
      await runtime.close();
      for (const address of [remembering, forgetting]) await queues.queue(address.name).obliterate({ force: true });
    }
  });

  it('bounds the batch-priority messages a process handles at once, and an interactive one is taken while the slots are full', async () => {
    const { queues, dispatcher, hub } = h.running.core.plane;
    const runtime = new ActorRuntime({ queues, dispatcher, log: h.running.core.log, lockMs: 5000, batchSlots: 2 });
    const asker = new Asker(hub, dispatcher, 'troupe-test-gate:');
    await asker.start();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const started: string[] = [];
    const address = actorAddress('batch-gate-test', { attempts: 1 });
    await runtime.start(defineActor<{ id: string }, null>({
      address,
      handle: async (_ctx, m) => {
        started.push(m.id);
        if (m.id.startsWith('batch')) await held;
        return { reply: m.id };
      },
    }), null, { concurrency: 4 });
    try {
      await dispatcher.send(['batch-1', 'batch-2', 'batch-3'].map((id) => ({ to: address, name: 'test', data: { id }, job_id: id, priority: 'batch' as const })));
      await until(async () => runtime.batchGate.load.running === 2 && runtime.batchGate.load.waiting === 1);
      assert.equal(started.length, 2, 'the third batch message waits for a slot');
      const third = ['batch-1', 'batch-2', 'batch-3'].find((id) => !started.includes(id));
      assert.equal(await asker.ask<string>({ to: address, name: 'test', data: { id: 'interactive-1' }, job_id: 'interactive-1', priority: 'interactive' }), 'interactive-1');
      assert.deepEqual(runtime.batchGate.load, { running: 2, waiting: 1 }, 'answered while the batch slots were full');
      release();
      await until(async () => started.length === 4 && runtime.batchGate.load.running === 0);
      assert.equal(started.at(-1), third);
    } finally {
      release();
      await runtime.close();
      await asker.close();
      await queues.queue(address.name).obliterate({ force: true });
    }
  });

  it('runs a batch turn waiting for a slot at once when an interactive message waits behind it on its shard', async () => {
    const { queues, dispatcher, hub } = h.running.core.plane;
    const runtime = new ActorRuntime({ queues, dispatcher, log: h.running.core.log, lockMs: 5000, batchSlots: 1 });
    const asker = new Asker(hub, dispatcher, 'troupe-test-inherit:');
    await asker.start();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const started: string[] = [];
    const address = actorAddress('inherit-test', { keyed: true, attempts: 1 });
    await runtime.start(defineActor<{ id: string }, null>({
      address,
      handle: async (_ctx, m) => {
        started.push(m.id);
        if (m.id === 'hold') await held;
        return { reply: m.id };
      },
    }), null);
    // Two keys on different shards: one batch turn holds the only slot, the other waits for it holding its own shard.
    const keyA = 'key-a';
    const keyB = ['key-b', 'key-c', 'key-d', 'key-e', 'key-f'].find((k) => shardOf(k, dispatcher.shards) !== shardOf(keyA, dispatcher.shards))!;
    const send = (key: string, id: string) => ({ to: address, key, name: 'test', data: { id }, job_id: id, priority: 'batch' as const });
    try {
      await dispatcher.send([send(keyA, 'hold')]);
      await until(async () => started.includes('hold'));
      await dispatcher.send([send(keyB, 'behind')]);
      await until(async () => runtime.batchGate.load.waiting === 1);
      assert.deepEqual(started, ['hold']);
      assert.equal(await asker.ask<string>({ to: address, key: keyB, name: 'test', data: { id: 'interactive' }, job_id: 'interactive', priority: 'interactive' }), 'interactive');
      assert.deepEqual(started, ['hold', 'behind', 'interactive'], 'the batch turn holding the shard ran first, while the slot was still taken');
    } finally {
      release();
      await runtime.close();
      await asker.close();
      await Promise.all(Array.from({ length: dispatcher.shards }, (_, i) => queues.queue(shardQueueName(address.name, i)).obliterate({ force: true })));
    }
  });

  it('hands off publications and jobs of several queues in one pipeline, and a repeated send is one job', async () => {
    const { dispatcher } = h.running.core.plane;
    const { got, stop } = await collect('troupe-test-channel');
    const command = { kind: 'message.start' as const, command_id: 'start-msg_none', message_id: 'msg_none' };
    const sends = ['ses_a', 'ses_b', 'ses_c'].map((id) => sessionCommand(id, command, 'batch', 60_000));
    await dispatcher.deliver([{ channel: 'troupe-test-channel', payload: 'hello' }], sends);
    await dispatcher.send(sends);
    await until(async () => got.length === 1);
    assert.deepEqual(got, ['hello']);
    for (const s of sends) {
      const job = await dispatcher.queueOf(SESSION, s.key).getJob(s.job_id);
      assert.ok(job, `job ${s.job_id} was added`);
      assert.deepEqual(job.data, { session_id: s.key, command });
      assert.equal(job.opts.priority, 10);
      assert.equal(await job.getState(), 'delayed');
      await job.remove();
    }
    stop();
  });
});
