import { createHash } from 'node:crypto';
import type { Stores } from '../../store/stores.js';
import type { SnapshotDoc } from '../../store/snapshots.js';

/** Hashes the stored object as it is now, so the verdict is about what publish will read, not what an upload once reported. */
async function measure(stores: Pick<Stores, 'blobs'>, id: string): Promise<{ sha256: string; size_bytes: number } | null> {
  if (!(await stores.blobs.exists('snapshots', id))) return null;
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of stores.blobs.download('snapshots', id)) {
    size += (chunk as Buffer).length;
    hash.update(chunk as Buffer);
  }
  return { sha256: hash.digest('hex'), size_bytes: size };
}

/** `ready`, or `failed` with a reason naming exactly what differed from the reservation. */
export async function verdictFor(stores: Pick<Stores, 'blobs'>, doc: SnapshotDoc): Promise<{ status: 'ready' | 'failed'; failure_reason: string | null }> {
  const got = await measure(stores, doc._id);
  if (!got) return { status: 'failed', failure_reason: 'No object was uploaded to the upload target.' };
  const diffs: string[] = [];
  if (got.size_bytes !== doc.size_bytes) diffs.push(`Size mismatch: reserved ${doc.size_bytes} bytes, uploaded ${got.size_bytes} bytes`);
  if (got.sha256 !== doc.sha256) diffs.push(`SHA-256 mismatch: reserved ${doc.sha256}, uploaded ${got.sha256}`);
  if (diffs.length === 0) return { status: 'ready', failure_reason: null };
  return { status: 'failed', failure_reason: `${diffs.join('; ')}.` };
}
