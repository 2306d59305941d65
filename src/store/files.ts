import type { Collection, Db } from 'mongodb';
import type { FileDoc } from '../domain/views/file.js';

/** File records, scoped by org. The record is written only after its blob is complete. */
export class FileStore {
  private readonly col: Collection<FileDoc>;

  constructor(db: Db) {
    this.col = db.collection<FileDoc>('files');
  }

  async insert(doc: FileDoc): Promise<FileDoc> {
    await this.col.insertOne(doc);
    return doc;
  }

  get(orgId: string, id: string): Promise<FileDoc | null> {
    return this.col.findOne({ _id: id, org_id: orgId });
  }

  /** Those of `ids` that name no file of this org (another org's file counts as missing). */
  async missing(orgId: string, ids: readonly string[]): Promise<string[]> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return [];
    const found = new Set((await this.col.find({ org_id: orgId, _id: { $in: unique } }, { projection: { _id: 1 } }).toArray()).map((d) => d._id));
    return unique.filter((id) => !found.has(id));
  }

  /** Oldest first; ids are time-ordered, so the id is the cursor. Fetches one extra row for has_more. */
  list(orgId: string, limit: number, after: string | null): Promise<FileDoc[]> {
    const filter = after ? { org_id: orgId, _id: { $gt: after } } : { org_id: orgId };
    return this.col.find(filter).sort({ _id: 1 }).limit(limit + 1).toArray();
  }

  async delete(orgId: string, id: string): Promise<boolean> {
    const r = await this.col.deleteOne({ _id: id, org_id: orgId });
    return r.deletedCount === 1;
  }
}
