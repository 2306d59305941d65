/**
 * The roles in a child process, as src/main.ts starts them, plus a fault, for
 * fault tests that kill it with SIGKILL. Configuration comes from the
 * environment, like a real dyno.
 *
 * TROUPE_TEST_AFTER_HANDOFF puts a fault where a session turn has handed off
 * its reply, envelopes and jobs but not yet written its session document
 * (the events are in the ledger and the messages written), once per session
 * in this process: `hang` stops the turn there for good (the test kills the
 * process), `fail` fails it there (the runtime retries it). The fault sits in
 * the projection writer's `afterMessages` callback, which is where the turn
 * hands off; a throw there keeps the writer from writing the sessions.
 *
 * TROUPE_TEST_POISON=<marker> makes poison work, as a tenant's catastrophic pattern did: the session's decision
 * on a model answer for a message whose user text holds the marker spins the CPU for good, before anything is
 * written. The process answers nothing after that and its job's lock lapses; the test kills it. With
 * TROUPE_TEST_POISON_MODE=hang the turn instead waits for good on that answer's ledger append (nothing written),
 * while the process goes on: its lock is renewed, so only a time budget ends it.
 *
 * TROUPE_TEST_TICK_HANG=1 stops this process's first schedule tick for good once it has sent its message and
 * before it settles its run (printing `tick-hung <run id>`), where a worker killed mid-tick leaves it.
 */
import type { decide } from '../../src/domain/session/decide.js';
import { parseRoles, startRoles } from '../../src/roles/start.js';
import { LedgerWriter } from '../../src/store/ledger-writer.js';
import { ProjectionWriter } from '../../src/store/projection-writer.js';
import { ScheduleStore } from '../../src/store/schedules.js';

class AfterHandOff extends Error {
  override name = 'AfterHandOff';
}

function injectFault(mode: string): void {
  if (mode !== 'hang' && mode !== 'fail') throw new Error(`TROUPE_TEST_AFTER_HANDOFF must be hang or fail, not ${mode}`);
  const save = ProjectionWriter.prototype.save;
  const doomed = new Set<string>();
  ProjectionWriter.prototype.save = function (this: ProjectionWriter, orgId, session, messages, afterMessages) {
    if (!afterMessages || doomed.has(session.id)) return save.call(this, orgId, session, messages, afterMessages);
    // A save that shares a flush with a faulted one fails with it before its own hand-off: it is retried and faulted then.
    let fired = false;
    const faulted = save.call(this, orgId, session, messages, () => {
      doomed.add(session.id);
      fired = true;
      afterMessages();
      process.stdout.write(`after-handoff ${session.id}\n`);
      throw new AfterHandOff(`fault injected after the hand-off of session ${session.id}`);
    });
    return mode === 'hang' ? faulted.catch((err: unknown) => (fired ? new Promise<void>(() => undefined) : Promise.reject(err))) : faulted;
  };
}

function injectPoison(marker: string, mode: string): void {
  if (mode !== 'spin' && mode !== 'hang') throw new Error(`TROUPE_TEST_POISON_MODE must be spin or hang, not ${mode}`);
  const hanging = new Set<string>();
  // CommonJS: turn.ts reads `decide` off this exports object at each call, so replacing it here reaches every turn.
  const decisions = require('../../src/domain/session/decide.js') as { decide: typeof decide };
  const real = decisions.decide;
  decisions.decide = (input, cmd) => {
    const parts = cmd.kind === 'model.responded' ? input.messages.get(cmd.message_id)?.parts : undefined;
    if (cmd.kind === 'model.responded' && parts?.some((p) => p.type === 'text' && p.text?.includes(marker))) {
      process.stdout.write(`poisoned ${cmd.message_id}\n`);
      if (mode === 'spin') for (;;);
      hanging.add(input.session.id);
    }
    return real(input, cmd);
  };
  const append = LedgerWriter.prototype.append;
  LedgerWriter.prototype.append = function (this: LedgerWriter, docs) {
    return docs.length && hanging.delete(docs[0].session_id) ? new Promise<void>(() => undefined) : append.call(this, docs);
  };
}

function hangFirstTick(): void {
  const settle = ScheduleStore.prototype.settleRun;
  let hung = false;
  ScheduleStore.prototype.settleRun = function (this: ScheduleStore, orgId, runId, status, error) {
    if (hung || status !== 'sent') return settle.call(this, orgId, runId, status, error);
    hung = true;
    process.stdout.write(`tick-hung ${runId}\n`);
    return new Promise<void>(() => undefined);
  };
}

if (process.env.TROUPE_TEST_TICK_HANG) hangFirstTick();
if (process.env.TROUPE_TEST_AFTER_HANDOFF) injectFault(process.env.TROUPE_TEST_AFTER_HANDOFF);
if (process.env.TROUPE_TEST_POISON) injectPoison(process.env.TROUPE_TEST_POISON, process.env.TROUPE_TEST_POISON_MODE ?? 'spin');

// Started by startRoleProcess (test/support/role-process.ts) with the roles to run, like src/main.ts.
startRoles(parseRoles(process.argv.slice(2))).catch((err: unknown) => {
  process.stderr.write(`worker failed: ${String(err)}\n`);
  process.exit(1);
});
