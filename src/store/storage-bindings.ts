import type { Collection, Db } from 'mongodb';
import type { StorageBindingDoc, StorageFileDoc } from '../domain/views/storage-binding.js';
import type { PageRequest } from './page.js';

export function storageFileId(bindingId: string, path: string): string {
  return `${bindingId}:${path}`;
}

/** Storage binding records and their file index; every query is scoped by org. */
export class StorageBindingStore {
  readonly bindings: Collection<StorageBindingDoc>;
  readonly files: Collection<StorageFileDoc>;

  constructor(db: Db) {
    this.bindings = db.collection<StorageBindingDoc>('storage_bindings');
    this.files = db.collection<StorageFileDoc>('storage_files');
  }

  async insert(doc: StorageBindingDoc): Promise<StorageBindingDoc> {
    await this.bindings.insertOne(doc);
    return doc;
  }

  get(orgId: string, id: string): Promise<StorageBindingDoc | null> {
    return this.bindings.findOne({ _id: id, org_id: orgId });
  }

  /** A binding sessions may use: present and not being deleted. */
  async live(orgId: string, id: string): Promise<StorageBindingDoc | null> {
    const doc = await this.get(orgId, id);
    return doc && !doc.deleting ? doc : null;
  }

  /** Oldest first, ids as cursors; one extra row for has_more. */
  list(orgId: string, page: PageRequest): Promise<StorageBindingDoc[]> {
    const filter: Record<string, unknown> = { org_id: orgId };
    if (page.after) filter._id = { $gt: page.after };
    return this.bindings.find(filter).sort({ _id: 1 }).limit(page.limit + 1).toArray();
  }

  /** A page of the binding's files in path order after the cursor `after` (a path); `limit + 1` rows for pageOf. */
  filesPage(orgId: string, bindingId: string, page: PageRequest): Promise<StorageFileDoc[]> {
    const filter: Record<string, unknown> = { org_id: orgId, binding_id: bindingId };
    if (page.after !== null) filter.path = { $gt: page.after };
    return this.files.find(filter).sort({ path: 1 }).limit(page.limit + 1).toArray();
  }

  filesOf(orgId: string, bindingId: string): Promise<StorageFileDoc[]> {
    return this.files.find({ org_id: orgId, binding_id: bindingId }).sort({ path: 1 }).toArray();
  }

  /** Each file's size only, for a binding's file_count and size_bytes: a listed page of bindings read every full file row. */
  sizesOf(orgId: string, bindingId: string): Promise<Pick<StorageFileDoc, 'size_bytes'>[]> {
    return this.files.find({ org_id: orgId, binding_id: bindingId }, { projection: { _id: 0, size_bytes: 1 } }).toArray();
  }

  async putFile(doc: StorageFileDoc): Promise<void> {
    await this.files.replaceOne({ _id: doc._id }, doc, { upsert: true });
  }

  async removeFile(id: string): Promise<void> {
    await this.files.deleteOne({ _id: id });
  }

  /** Claims the binding for deletion; null when it is unknown or already being deleted. */
  markDeleting(orgId: string, id: string): Promise<StorageBindingDoc | null> {
    return this.bindings.findOneAndUpdate({ _id: id, org_id: orgId, deleting: false }, { $set: { deleting: true } });
  }

  async unmarkDeleting(orgId: string, id: string): Promise<void> {
    await this.bindings.updateOne({ _id: id, org_id: orgId }, { $set: { deleting: false } });
  }

  async remove(orgId: string, id: string): Promise<void> {
    await this.files.deleteMany({ org_id: orgId, binding_id: id });
    await this.bindings.deleteOne({ _id: id, org_id: orgId });
  }
}
