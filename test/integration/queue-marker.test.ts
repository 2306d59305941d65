import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Job, Queue, Worker } from 'bullmq';
import { startHarness, uniqueName, type Harness } from '../support/harness.js';
import { until } from '../support/wait.js';

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
  function queueAndWorker(processor: (job: Job) => Promise<unknown> = async () => 'ok', concurrency = 1): { queue: Queue; worker: Worker; name: string } {
    const { queues } = h.running.core.plane;
    const name = uniqueName('marker');
    const queue = queues.queue(name);
    const worker = queues.worker(name, processor, { autorun: false, concurrency });
    opened.push(worker);
    return { queue, worker, name };
  }

  /** The worker's own fetch (its moveToActive), each call recorded as it returns: a job, or empty. */
  function recordFetches(worker: Worker): ('job' | 'empty')[] {
    const fetches: ('job' | 'empty')[] = [];
    const w = worker as unknown as { moveToActive(token: string, name?: string): Promise<Job | undefined> };
    const real = w.moveToActive.bind(worker);
    w.moveToActive = async (token, name) => {
      const job = await real(token, name);
      fetches.push(job ? 'job' : 'empty');
      return job;
    };
    return fetches;
  }

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

  describe('the word "nothing left" (a worker that runs several jobs at once)', () => {
    it('the script says so with the last job it hands out, and only then', async () => {
      const { queue, worker } = queueAndWorker(async () => 'ok', 4);
      const backend = (worker as unknown as { backend: { moveToActive(token: string, name?: string): Promise<unknown[]> } }).backend;
      await queue.add('a', {});
      await takeMarker(worker);
      // The fetch's raw answer: [job, id, rate-limit delay, next delayed time, nothing left].
      const raw = await backend.moveToActive('t0');
      assert.ok(raw[0], 'the job was not handed out');
      assert.equal(raw[4], 1, 'the script did not say that nothing else could be taken');
      await queue.add('b', {});
      await queue.add('c', {}, { priority: 1 });
      await takeMarker(worker);
      assert.equal((await backend.moveToActive('t1'))[4], undefined, 'a job is left: the worker must fetch again');
      assert.equal((await backend.moveToActive('t2'))[4], 1);
      // A delayed job's time comes with the word, as an empty fetch returns it.
      const delayed = await queue.add('d', {}, { delay: 60_000 });
      await queue.add('e', {});
      await takeMarker(worker);
      const withDelayed = await backend.moveToActive('t3');
      assert.equal(withDelayed[4], 1);
      assert.equal(withDelayed[3], delayed.timestamp + 60_000);
    });

    it('a worker woken for a lone job takes it and waits on the marker again, with no fetch that finds nothing (upstream: one per job)', async () => {
      const started: string[] = [];
      const { queue, worker } = queueAndWorker(async (job) => void started.push(job.id!), 4);
      const fetches = recordFetches(worker);
      void worker.run();
      await sleep(200); // the first look of a fresh worker finds the queue empty
      fetches.length = 0;
      for (let i = 0; i < 5; i++) {
        const job = await queue.add('lone', { i });
        await until(async () => started.includes(job.id!), 2_000);
        await sleep(100);
      }
      assert.deepEqual(fetches, ['job', 'job', 'job', 'job', 'job'], `fetches: ${fetches.join(', ')}`);
    });

    it('a job added after the word, before the worker waits, starts at once (its add left the marker)', async () => {
      const started = new Map<string, number>();
      let release: () => void = () => undefined;
      const held = new Promise<void>((r) => (release = r));
      const { queue, worker } = queueAndWorker(async (job) => {
        started.set(job.id!, Date.now());
        if (job.name === 'first') await held;
      }, 4);
      const fetches = recordFetches(worker);
      // Between the fetch that said "nothing left" and the blocking wait: the narrowest window there is.
      const w = worker as unknown as { waitForJob(blockUntil: number): Promise<number> };
      const realWait = w.waitForJob.bind(worker);
      const late: { job?: Job; at?: number } = {};
      w.waitForJob = async (blockUntil) => {
        if (fetches.length && !late.job) {
          late.job = await queue.add('late', {});
          late.at = Date.now();
        }
        return realWait(blockUntil);
      };
      await queue.add('first', {});
      void worker.run();
      try {
        await until(async () => late.job && started.has(late.job.id!), DRAIN_DELAY_MS - 1_000);
        const waited = started.get(late.job!.id!)! - late.at!;
        assert.ok(waited < 1_000, `the late job waited ${waited} ms`);
        assert.ok(!fetches.includes('empty'), `fetches: ${fetches.join(', ')}`);
        // And one added while the worker waits, with the first job still running.
        const third = await queue.add('third', {});
        const at = Date.now();
        await until(async () => started.has(third.id!), DRAIN_DELAY_MS - 1_000);
        assert.ok(started.get(third.id!)! - at < 1_000);
      } finally {
        release();
      }
    });

    it('several jobs waiting are all taken at once, up to the concurrency', async () => {
      let running = 0;
      let most = 0;
      let release: () => void = () => undefined;
      const held = new Promise<void>((r) => (release = r));
      const { queue, worker } = queueAndWorker(async () => {
        most = Math.max(most, ++running);
        await held;
        running--;
      }, 3);
      await queue.addBulk([1, 2, 3, 4].map((i) => ({ name: 'j', data: { i }, opts: { priority: i } })));
      void worker.run();
      try {
        await until(async () => running === 3, 2_000);
        await sleep(200);
        assert.equal(most, 3);
      } finally {
        release();
      }
      await until(async () => (await queue.getJobCounts('completed')).completed === 4, 2_000);
    });

    it('a delayed job still starts on time when the word came with the last job (the script returns its time, as an empty fetch would)', async () => {
      const started = new Map<string, number>();
      const { queue, worker } = queueAndWorker(async (job) => {
        started.set(job.name, Date.now());
        if (job.name === 'long') await sleep(4_000);
      }, 2);
      void worker.run();
      await sleep(300); // the worker waits on the marker
      const due = Date.now() + 1_000;
      await queue.add('delayed', {}, { delay: 1_000 });
      // The worker took the delayed job's marker and waits until its time: no other marker is left to tell it.
      await until(async () => (await markers(worker)) === 0, 2_000);
      await queue.add('long', {});
      await until(async () => started.has('delayed'), DRAIN_DELAY_MS);
      const late = started.get('delayed')! - due;
      // Without the time it starts at the long job's end, 3 s late; the bound leaves room for a loaded host.
      assert.ok(late < 1_500, `the delayed job started ${late} ms after its time`);
      assert.ok(started.get('delayed')! < started.get('long')! + 3_500, 'the delayed job waited for the long one to end');
    });
  });
});
