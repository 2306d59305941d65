import type { MessageStore } from '../../src/store/messages.js';
import { messageState } from '../../src/domain/views/message.js';
import { sessionState, type SessionStore } from '../../src/store/sessions.js';
import type { SessionDoc } from '../../src/domain/views/session.js';
import type { AgentVersionDoc } from '../../src/store/agents.js';
import type { JobProbe } from '../runtime/actor.js';
import type { Outbox } from '../../src/domain/actors/address.js';
import { toolAnswerCommandId } from '../../src/domain/actors/tool-runner.js';
import { agentContext } from '../../src/app/sessions/agent-context.js';
import { effectSends } from '../../src/domain/session/effects.js';
import { modelAnswerCommandId, SESSION, sessionCommand, sessionJobId, sessionResume, type Effect } from '../../src/domain/actors/session.js';
import { outstanding } from '../../src/domain/session/outstanding.js';
import { ResumeLog } from './resume-log.js';

const PAGE = 500;
/** Bounds one sweep's work; the rest is reached on the next sweeps. */
const MAX_PER_SWEEP = 5000;
/** Sessions looked at in parallel (each look is a few MongoDB and Redis round trips). */
const LOOK_CONCURRENCY = 16;
/** A still session whose jobs are all there is looked at again after a growing gap, at most this long. */
const MAX_GAP_MS = 60_000;
/**
 * The first gap of a batch-priority session: its queued work waits behind
 * the rest of a drain by design, and looking at each of 10,000 of them every
 * few seconds cost a drain some 5 job probes per item. Lost work is still
 * found within this, and at once after a Redis restart.
 */
const BATCH_FIRST_GAP_MS = 30_000;

interface Watch {
  seq: number;
  due: number;
  gap: number;
}

export interface SweeperDeps {
  sessions: Pick<SessionStore, 'running'>;
  messages: Pick<MessageStore, 'byIds'>;
  versions: { get(orgId: string, id: string): Promise<AgentVersionDoc | null> };
  /** Where jobs stand in the queues (the runtime's dispatcher). */
  jobs: JobProbe;
  outbox: Outbox;
  publicUrl: string;
  log: { warn(obj: object, msg: string): void };
  /** Redis's run_id (INFO server): it changes when Redis restarts. */
  redisRunId(): Promise<string>;
  intervalMs: number;
}

export interface SweepResult {
  running: number;
  resumed: string[];
}

/**
 * Finds work that Redis lost (a restart without persistence, a failover) and
 * hands it back to the session actors. MongoDB's read models are the truth:
 * a session they show `running` must have a job for whatever it waits on.
 * A session whose outstanding jobs (src/domain/session/outstanding.ts) are missing or dead gets
 * a `session.resume` command. Every running session is looked at right after
 * Redis restarted; otherwise only sessions that stood still since the last
 * sweep are, with a growing gap while their jobs are there (thousands of
 * queued batch sessions must not cost thousands of reads every few seconds). The command's job id is fixed by the session's
 * sequence number and the actor re-issues jobs under their original ids, so
 * any number of sweepers, run any number of times, add no turn to a ledger.
 */
export class StrandedWorkSweeper {
  /** Running sessions seen: their sequence then, and when their jobs are next worth a look. */
  private watch = new Map<string, Watch>();
  private runId: string | null = null;
  private readonly resumeLog = new ResumeLog();

  constructor(private readonly deps: SweeperDeps) {}

  async sweep(now = new Date()): Promise<SweepResult> {
    // A Redis that restarted (its run_id changed) may have lost anything: look at every running session at once.
    // The run id is kept only once a sweep has finished, so a sweep cut short (Redis still reconnecting) is redone in full.
    const runId = await this.deps.redisRunId();
    const restarted = runId !== this.runId;
    const next = new Map<string, Watch>();
    const resumed: string[] = [];
    const t = now.getTime();
    let after: string | null = null;
    while (next.size < MAX_PER_SWEEP) {
      const page: SessionDoc[] = await this.deps.sessions.running(PAGE, after);
      const look: SessionDoc[] = [];
      for (const doc of page) {
        const w = this.watch.get(doc._id);
        const moved = !w || w.seq !== doc.last_sequence;
        // A moving session is not stranded; a still one is looked at, then less and less often while its jobs are there.
        if (!restarted && (moved || t < w.due)) next.set(doc._id, moved ? this.fresh(doc, t) : w);
        else look.push(doc);
      }
      const stranded = new Set(await this.strandedAmong(look, now));
      if (stranded.size) await this.deps.outbox.send([...stranded].map((doc) => sessionCommand(doc._id, sessionResume(doc.last_sequence), doc.priority ?? 'interactive')));
      for (const doc of look) {
        if (stranded.has(doc)) {
          resumed.push(doc._id);
          next.set(doc._id, this.fresh(doc, t));
        } else {
          const gap = Math.min(MAX_GAP_MS, (this.watch.get(doc._id)?.gap ?? this.deps.intervalMs) * 2);
          next.set(doc._id, { seq: doc.last_sequence, gap, due: t + gap });
        }
      }
      if (page.length < PAGE) break;
      after = page[page.length - 1]._id;
    }
    this.watch = next;
    this.runId = runId;
    const line = this.resumeLog.note(resumed, t, restarted);
    if (line) this.deps.log.warn({ ...line, redis_restarted: restarted }, 'resumed sessions whose queued work was lost');
    return { running: next.size, resumed };
  }

  /** The stranded ones among `docs`, looked at LOOK_CONCURRENCY at a time: after a Redis restart every running session is, and one by one is too slow. */
  private async strandedAmong(docs: SessionDoc[], now: Date): Promise<SessionDoc[]> {
    const out: SessionDoc[] = [];
    let i = 0;
    const lane = async () => {
      while (i < docs.length) {
        const doc = docs[i++];
        if (await this.stranded(doc, now)) out.push(doc);
      }
    };
    await Promise.all(Array.from({ length: Math.min(LOOK_CONCURRENCY, docs.length) }, lane));
    return out;
  }

  private fresh(doc: SessionDoc, t: number): Watch {
    const gap = doc.priority === 'batch' ? Math.max(this.deps.intervalMs, BATCH_FIRST_GAP_MS) : this.deps.intervalMs;
    return { seq: doc.last_sequence, gap, due: t + gap };
  }

  private async stranded(doc: SessionDoc, now: Date): Promise<boolean> {
    const state = sessionState(doc);
    const ids = [state.running_message_id, state.queued_message_ids[0]].filter((id): id is string => !!id);
    const messages = new Map((await this.deps.messages.byIds(doc._id, ids)).map((m) => [m._id, messageState(m)] as const));
    const version = await this.deps.versions.get(doc.org_id, doc.version_id);
    const effects = outstanding({ session: state, messages, agent: agentContext(doc, version, this.deps.publicUrl, now) });
    let missing = false;
    for (const e of effects) if (!(await this.alive(doc, e))) missing = true;
    return missing;
  }

  /**
   * Whether the effect's job can still move the session on: it is waiting or
   * running, or it finished and its answer command is still queued. A dead
   * job (failed, or finished with its answer lost) is removed so that the
   * resume can issue it again under the same id.
   */
  private async alive(doc: SessionDoc, e: Effect): Promise<boolean> {
    if (e.kind !== 'model.call' && e.kind !== 'tool.run' && e.kind !== 'session.command') return true;
    const job = effectSends(doc, [e])[0];
    const answer = e.kind === 'model.call' ? modelAnswerCommandId(e.call) : e.kind === 'tool.run' ? toolAnswerCommandId(e.job) : null;
    const state = await this.deps.jobs.state(job);
    if (state === null) return false;
    const answerJob = answer !== null ? { to: SESSION, key: doc._id, job_id: sessionJobId(doc._id, answer) } : null;
    const answerState = answerJob && state === 'completed' ? await this.deps.jobs.state(answerJob) : null;
    const answerDead = answerState === null || answerState === 'failed';
    if (state === 'failed' || (state === 'completed' && answer !== null && answerDead)) {
      if (answerJob && answerState !== null) await this.deps.jobs.remove(answerJob).catch(() => undefined);
      await this.deps.jobs.remove(job).catch(() => undefined);
      return false;
    }
    return true;
  }
}
