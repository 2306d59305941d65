/** A unique index refused the write (E11000), on any of the servers Troupe runs on. */
export function isDuplicateKey(err: unknown): boolean {
  return (err as { code?: number }).code === 11000;
}

/**
 * Runs an upsert once more when it fails with a duplicate key. Two first
 * writers of one document race: both miss it, both insert, one wins. Real
 * MongoDB retries such an upsert itself only when every field of the unique
 * index that refused it is an equality in the filter; the `_id` a
 * `$setOnInsert` gives is not, and neither local server retries at all. The
 * second try finds the winner's document and updates it, as a writer that
 * came a moment later would.
 */
export async function retryDuplicateUpsert<T>(upsert: () => Promise<T>): Promise<T> {
  try {
    return await upsert();
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    return upsert();
  }
}
