import assert from 'node:assert/strict';
import { defineActor } from '../../actors/runtime/actor.js';
import { ActorRuntime } from '../../actors/runtime/runtime.js';
import { TOOL_RUNNER, type ToolRunJob } from '../../src/domain/actors/tool-runner.js';
import { startHarness, type Harness } from '../support/harness.js';
import { until } from '../support/wait.js';

const CALL_MS = 300;
const BACKLOG = 40;

/**
 * Orgs take turns on the tool-runner queue: org A's 40 slow calls are queued
 * first, then org B's one call starts within about one call's time, on two
 * runtimes (two processes' worth of workers, one slot each) sharing the
 * queue. Every call still runs exactly once, and the orgs' pending counts go
 * back to zero. The handler stands in for the sandbox: the test is about the
 * queue, with the tool-runner's real address.
 */
describe('tool calls shared fairly between orgs', function () {
  this.timeout(30_000);
  let h: Harness;

  before(async () => {
    h = await startHarness({ roles: ['web'] });
  });
  after(async () => h?.close());

  it("starts another org's call within one call's slot of a 40-call backlog, and runs every call once", async () => {
    const { queues, dispatcher } = h.running.core.plane;
    const runtimes = [0, 1].map(() => new ActorRuntime({ queues, dispatcher, log: h.running.core.log, lockMs: 5000 }));
    const started = new Map<string, number>();
    const runs: string[] = [];
    const slow = defineActor<ToolRunJob, null>({
      address: TOOL_RUNNER,
      handle: async (_ctx, job) => {
        started.set(job.tool_call_id, Date.now());
        runs.push(job.tool_call_id);
        await new Promise((r) => setTimeout(r, CALL_MS));
        return {};
      },
    });
    const job = (org: string, n: number): ToolRunJob => ({ org_id: org, session_id: `ses_${org}`, message_id: `msg_${org}`, attempt: 1, tool_call_id: `${org}-${n}`, tool_name: 't', arguments: {} });
    const send = (j: ToolRunJob) => ({ to: TOOL_RUNNER, name: 'tool.run', data: j, job_id: `fair-${j.tool_call_id}`, priority: 'interactive' as const });
    try {
      // One turn hands off the whole backlog, as a session with 40 parallel tool calls would.
      await dispatcher.send(Array.from({ length: BACKLOG }, (_, i) => send(job('org_a', i))));
      for (const r of runtimes) await r.start(slow, null, { concurrency: 1, gateBatch: false });
      await until(async () => runs.length >= 2);
      const sentB = Date.now();
      await dispatcher.send([send(job('org_b', 0))]);
      await until(async () => started.has('org_b-0'), 10_000);
      const waited = started.get('org_b-0')! - sentB;
      // The order is the claim; the time has room for a loaded host (first come first served: about 6 s).
      assert.ok(runs.indexOf('org_b-0') <= 4, `org B's call ran after ${runs.indexOf('org_b-0')} of org A's`);
      assert.ok(waited <= CALL_MS + 400, `org B's call waited ${waited} ms behind org A's backlog (one call is ${CALL_MS} ms)`);
      await until(async () => runs.length === BACKLOG + 1 && (await dispatcher.fair!.pending(TOOL_RUNNER.name, 'org_a')) === 0, 20_000);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(runs.length, BACKLOG + 1, 'no call ran twice');
      assert.equal(new Set(runs).size, BACKLOG + 1, 'every call ran');
      assert.equal(await dispatcher.fair!.pending(TOOL_RUNNER.name, 'org_b'), 0);
    } finally {
      await Promise.all(runtimes.map((r) => r.close()));
      await queues.queue(TOOL_RUNNER.name).obliterate({ force: true });
    }
  });

  it('counts a repeated send once', async () => {
    const { dispatcher, queues } = h.running.core.plane;
    const j: ToolRunJob = { org_id: 'org_c', session_id: 'ses_c', message_id: 'msg_c', attempt: 1, tool_call_id: 'c-0', tool_name: 't', arguments: {} };
    const s = { to: TOOL_RUNNER, name: 'tool.run', data: j, job_id: 'fair-c-0' };
    try {
      await dispatcher.send([s]);
      await dispatcher.send([s]);
      assert.equal(await dispatcher.fair!.pending(TOOL_RUNNER.name, 'org_c'), 1);
      const added = await queues.queue(TOOL_RUNNER.name).getJob('fair-c-0');
      assert.equal(added?.opts.priority, 1, "the org's first pending call has the first rank");
    } finally {
      await queues.queue(TOOL_RUNNER.name).obliterate({ force: true });
      await h.running.core.redis.del(h.running.core.keys.fairShare(TOOL_RUNNER.name, 'org_c'));
    }
  });
});
