import { MongoBulkWriteError, type Collection, type Document, type OptionalUnlessRequiredId } from 'mongodb';

/**
 * Unordered insertMany that reports which documents failed instead of
 * throwing: one bad document must not cost the others their row (batch
 * creation writes thousands of new sessions at once). Any error that is not
 * per-document (the server is unreachable) is thrown.
 */
export async function insertEach<T extends Document>(col: Collection<T>, docs: OptionalUnlessRequiredId<T>[]): Promise<Set<number>> {
  const failed = new Set<number>();
  if (!docs.length) return failed;
  try {
    await col.insertMany(docs, { ordered: false });
  } catch (err) {
    if (!(err instanceof MongoBulkWriteError)) throw err;
    const list = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
    if (!list.length) throw err;
    for (const e of list) failed.add(e.index);
  }
  return failed;
}
