import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Job, Queue, Worker } from 'bullmq';
import { startHarness, uniqueName, type Harness } from '../support/harness.js';

/** BullMQ's default drainDelay: how long a worker sleeps on an unwoken queue before it looks again. */
const DRAIN_DELAY_MS = 5_000;

/**
 * BullMQ's wake-up marker, as Troupe's patch leaves it (patches/bullmq+*.patch, docs/decisions.md): handing a job
 * out wakes another worker only when a job is left that it could take now. Upstream re-adds the marker after every
 * job, so at low load about half of a worker's fetches found nothing (issue 11). The fetches here are the real
 * scripts on the real Redis, one step at a time (a worker that never runs its loop), so each assertion reads the
 * marker exactly where the script left it; the last test runs a real worker loop to show no job waits unwoken.
 */
describe('BullMQ wake-up marker (issue 11)', function () {
  this.timeout(60_000);
  let h: Harness;
  const opened: (Queue | Worker)[] = [];

  before(async () => {
    // Says why up front: a node_modules installed before the patch existed (or shared with an older checkout) lacks it.
    const script = readFileSync(join(dirname(require.resolve('bullmq')), 'scripts', 'moveToActive-11.js'), 'utf8');
    assert.ok(script.includes("Troupe's patch"), 'node_modules/bullmq lacks patches/bullmq+6.7.0.patch: run `npm install` (its postinstall, patch-package, applies it)');
    h = await startHarness({ roles: ['web'] });
  });
  after(async () => {
    await Promise.allSettled(opened.map((o) => o.close()));
    await h?.close();
  });

  /** A fresh queue and a worker on it that fetches only when asked. */
  function queueAndWorker(processor: (job: Job) => Promise<unknown> = async () => 'ok'): { queue: Queue; worker: Worker; name: string } {
    const { queues } = h.running.core.plane;
    const name = uniqueName('marker');
    const queue = queues.queue(name);
    const worker = queues.worker(name, processor, { autorun: false, concurrency: 1 });
    opened.push(worker);
    return { queue, worker, name };
  }

  const markers = (w: Worker) => h.running.core.redis.zcard(w.keys.marker);

  /** The marker a job's add left is gone, as when the worker's blocking wait took it. */
  const takeMarker = (w: Worker) => h.running.core.redis.del(w.keys.marker);

  it('leaves no marker when the job handed out was the only one (upstream left one: a later fetch found nothing)', async () => {
    const { queue, worker } = queueAndWorker();
    for (let i = 0; i < 5; i++) {
      await queue.add('one', { i });
      await takeMarker(worker);
      const job = await worker.getNextJob(`t${i}`, { block: false });
      assert.equal(job?.data.i, i);
      assert.equal(await markers(worker), 0, `job ${i}: a marker was left with nothing queued`);
      await job!.moveToCompleted('ok', `t${i}`, false);
    }
  });

  it('leaves the marker when another job waits, so a second worker wakes for it (why upstream adds it)', async () => {
    const { queue, worker } = queueAndWorker();
    await queue.addBulk([{ name: 'a', data: {} }, { name: 'b', data: {} }]);
    await takeMarker(worker);
    const first = await worker.getNextJob('t', { block: false });
    assert.equal(first?.name, 'a');
    assert.equal(await markers(worker), 1);
  });

  it('leaves the marker when a prioritized job waits', async () => {
    const { queue, worker } = queueAndWorker();
    await queue.add('a', {}, { priority: 1 });
    await queue.add('b', {}, { priority: 2 });
    await takeMarker(worker);
    assert.equal((await worker.getNextJob('t', { block: false }))?.name, 'a');
    assert.equal(await markers(worker), 1);
  });

  it('leaves no marker on a queue at its global concurrency (a session shard), and the finishing job fetches the next', async () => {
    const { queue, worker } = queueAndWorker();
    await queue.setGlobalConcurrency(1);
    await queue.add('a', {});
    await queue.add('b', {}, { priority: 1 });
    await takeMarker(worker);
    const first = await worker.getNextJob('t1', { block: false });
    assert.equal(first?.name, 'a');
    // No one else could take 'b' before 'a' ends: waking a worker would only cost it an empty fetch.
    assert.equal(await markers(worker), 0);
    const next = await first!.moveToCompleted('ok', 't1', true);
    assert.equal((next as unknown[])[1], (await queue.getJobs(['active']))[0]?.id, 'the finishing job did not fetch the next');
    assert.equal((await queue.getJobs(['active']))[0]?.name, 'b');
    assert.equal(await markers(worker), 0);
  });

  it('starts every job promptly on a real worker loop, jobs added one at a time and in bursts, at global concurrency 1', async function () {
    const started = new Map<string, number>();
    const { queue, worker } = queueAndWorker(async (job) => {
      started.set(job.id!, Date.now());
      await new Promise((r) => setTimeout(r, job.data.ms as number));
    });
    await queue.setGlobalConcurrency(1);
    const added = new Map<string, number>();
    const add = async (ms: number) => {
      const job = await queue.add('j', { ms });
      added.set(job.id!, Date.now());
    };
    void worker.run();
    // Lone jobs on an idle queue (the worker waits on the marker), then bursts queued behind a running job.
    for (let i = 0; i < 5; i++) {
      await add(0);
      await new Promise((r) => setTimeout(r, 150));
    }
    for (let burst = 0; burst < 3; burst++) {
      await Promise.all([add(30), add(0), add(0)]);
      await new Promise((r) => setTimeout(r, 300));
    }
    const deadline = Date.now() + DRAIN_DELAY_MS;
    while (started.size < added.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(started.size, added.size, 'a job was never started');
    // Each burst's jobs run one after another (30 ms + 2 short ones); a job left unwoken would wait drainDelay.
    const worst = Math.max(...[...added].map(([id, at]) => started.get(id)! - at));
    assert.ok(worst < 1_000, `a job waited ${worst} ms to start`);
  });
});
