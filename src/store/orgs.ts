import type { Collection, Db } from 'mongodb';
import type { Budget } from '../domain/budget.js';
import type { OrgLimits } from '../domain/org-limits.js';
import { newId } from '../domain/ids.js';
import { isDuplicateKey } from './duplicate-key.js';

export interface OrgDoc {
  _id: string;
  name: string;
  created_at: Date;
  /** This org's own limits; a missing field takes the environment's default. */
  limits?: Partial<OrgLimits>;
  /** Idle sessions older than this many days are deleted by the reaper; absent or null keeps them forever. */
  session_retention_days?: number | null;
  /** The org's own routing tokens-per-minute limit (PATCH /v1/organization); it can only tighten the operator's. */
  tokens_per_min?: number | null;
  /** The org's spend budget; absent or null: none. */
  budget?: Budget | null;
}

export class OrgStore {
  private readonly orgs: Collection<OrgDoc>;

  constructor(db: Db) {
    this.orgs = db.collection<OrgDoc>('orgs');
  }

  /** Returns the org with this name, creating it if absent (races resolve on the unique name index). */
  async ensure(name: string): Promise<OrgDoc> {
    const found = await this.orgs.findOne({ name });
    if (found) return found;
    const doc: OrgDoc = { _id: newId('org'), name, created_at: new Date() };
    try {
      await this.orgs.insertOne(doc);
      return doc;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      return (await this.orgs.findOne({ name }))!;
    }
  }

  async create(name: string): Promise<OrgDoc> {
    const doc: OrgDoc = { _id: newId('org'), name, created_at: new Date() };
    await this.orgs.insertOne(doc);
    return doc;
  }

  byName(name: string): Promise<OrgDoc | null> {
    return this.orgs.findOne({ name });
  }

  byId(id: string): Promise<OrgDoc | null> {
    return this.orgs.findOne({ _id: id });
  }

  /** Sets (number) or clears (null, back to the default) limits of one org; null when there is no such org. */
  async setLimits(id: string, changes: Partial<Record<keyof OrgLimits, number | null>>): Promise<OrgDoc | null> {
    const set: Record<string, number> = {};
    const unset: Record<string, ''> = {};
    for (const [k, v] of Object.entries(changes)) {
      if (v === null) unset[`limits.${k}`] = '';
      else set[`limits.${k}`] = v;
    }
    const update = { ...(Object.keys(set).length ? { $set: set } : {}), ...(Object.keys(unset).length ? { $unset: unset } : {}) };
    if (!Object.keys(update).length) return this.byId(id);
    return this.orgs.findOneAndUpdate({ _id: id }, update, { returnDocument: 'after' });
  }

  async setSettings(id: string, settings: { session_retention_days?: number | null; tokens_per_min?: number | null; budget?: Budget | null }): Promise<OrgDoc | null> {
    return this.orgs.findOneAndUpdate({ _id: id }, { $set: settings }, { returnDocument: 'after' });
  }

  /** Orgs whose sessions expire. Few documents: a scan is fine. */
  withRetention(): Promise<OrgDoc[]> {
    return this.orgs.find({ session_retention_days: { $gt: 0 } }).toArray();
  }

  list(): Promise<OrgDoc[]> {
    return this.orgs.find({}).sort({ name: 1 }).toArray();
  }
}
