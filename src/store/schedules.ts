import type { Collection, Db } from 'mongodb';
import type { ScheduleDoc, ScheduleRunDoc, ScheduleRunStatus } from '../domain/schedule.js';
import { isDuplicateKey } from './duplicate-key.js';

export type ScheduleChange = Partial<Pick<ScheduleDoc, 'paused' | 'cron' | 'timezone' | 'message'>>;

/** Schedules and their runs; every query names the org. */
export class ScheduleStore {
  private readonly col: Collection<ScheduleDoc>;
  private readonly runs: Collection<ScheduleRunDoc>;

  constructor(db: Db) {
    this.col = db.collection<ScheduleDoc>('schedules');
    this.runs = db.collection<ScheduleRunDoc>('schedule_runs');
  }

  async insert(doc: ScheduleDoc): Promise<ScheduleDoc> {
    await this.col.insertOne(doc);
    return doc;
  }

  get(orgId: string, id: string): Promise<ScheduleDoc | null> {
    return this.col.findOne({ _id: id, org_id: orgId });
  }

  /** An agent's schedules in creation order (ids are time-ordered), one more than `limit` so the caller sees has_more. */
  listByAgent(orgId: string, agentId: string, limit: number, after: string | null): Promise<ScheduleDoc[]> {
    const filter = after ? { org_id: orgId, agent_id: agentId, _id: { $gt: after } } : { org_id: orgId, agent_id: agentId };
    return this.col.find(filter).sort({ _id: 1 }).limit(limit + 1).toArray();
  }

  /**
   * Every org's schedules by id, a page at a time: only the reconciler that
   * re-arms job schedulers at worker start reads across orgs (app/schedules/reconcile.ts).
   */
  listAll(limit: number, after: string | null): Promise<ScheduleDoc[]> {
    return this.col.find({ _id: { $gt: after ?? '' } }).sort({ _id: 1 }).limit(limit).toArray();
  }

  /** Applies a change; null when the schedule is not the org's. */
  update(orgId: string, id: string, change: ScheduleChange): Promise<ScheduleDoc | null> {
    return this.col.findOneAndUpdate({ _id: id, org_id: orgId }, { $set: { ...change, updated_at: new Date() } }, { returnDocument: 'after' });
  }

  /** Deletes the schedule and its runs; false when it was not the org's. */
  async remove(orgId: string, id: string): Promise<boolean> {
    const { deletedCount } = await this.col.deleteOne({ _id: id, org_id: orgId });
    if (deletedCount) await this.runs.deleteMany({ org_id: orgId, schedule_id: id });
    return deletedCount > 0;
  }

  /**
   * Records a tick as pending, once: the run's id is the tick's, so a second
   * worker (or a retry) that reaches the same tick gets the record the first
   * one wrote and `created: false`.
   */
  async claimRun(run: ScheduleRunDoc): Promise<{ run: ScheduleRunDoc; created: boolean }> {
    try {
      await this.runs.insertOne(run);
      return { run, created: true };
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      const existing = await this.runs.findOne({ _id: run._id, org_id: run.org_id });
      if (!existing) throw err;
      return { run: existing, created: false };
    }
  }

  async settleRun(orgId: string, runId: string, status: ScheduleRunStatus, error: string | null = null): Promise<void> {
    await this.runs.updateOne({ _id: runId, org_id: orgId }, { $set: { status, error } });
  }

  /**
   * Settles a tick that gave up as failed: its pending run, or a failed run in
   * its place when it gave up before recording one. A run already settled keeps
   * its status (a tick that sent its message and then failed still sent it).
   */
  async failRun(run: ScheduleRunDoc): Promise<void> {
    const { created } = await this.claimRun(run);
    if (!created) await this.runs.updateOne({ _id: run._id, org_id: run.org_id, status: 'pending' }, { $set: { status: 'failed', error: run.error } });
  }

  /**
   * Runs still pending though their tick was due before `before`, across
   * orgs, oldest first: ticks whose job BullMQ failed without a worker event
   * (stalled past its limit), which the reaper settles as failed.
   */
  async abandonRuns(before: Date, limit: number, error: string): Promise<number> {
    const stuck = await this.runs.find({ status: 'pending', scheduled_for: { $lt: before } }, { projection: { _id: 1 } }).sort({ scheduled_for: 1 }).limit(limit).toArray();
    if (!stuck.length) return 0;
    const r = await this.runs.updateMany({ _id: { $in: stuck.map((x) => x._id) }, status: 'pending' }, { $set: { status: 'failed', error } });
    return r.modifiedCount;
  }

  /** Deletes at most `limit` runs of any org whose tick was due before `before`, oldest first; how many. */
  async reapRuns(before: Date, limit: number): Promise<number> {
    const old = await this.runs.find({ scheduled_for: { $lt: before } }, { projection: { _id: 1 } }).sort({ scheduled_for: 1 }).limit(limit).toArray();
    if (!old.length) return 0;
    const r = await this.runs.deleteMany({ _id: { $in: old.map((x) => x._id) } });
    return r.deletedCount;
  }

  /** A schedule's runs, newest tick first; `before` is the tick time (ms) of the last row of the page before. */
  listRuns(orgId: string, scheduleId: string, limit: number, before: number | null): Promise<ScheduleRunDoc[]> {
    const filter = before !== null ? { org_id: orgId, schedule_id: scheduleId, scheduled_for: { $lt: new Date(before) } } : { org_id: orgId, schedule_id: scheduleId };
    return this.runs.find(filter).sort({ scheduled_for: -1 }).limit(limit + 1).toArray();
  }
}
