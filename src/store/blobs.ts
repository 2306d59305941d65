import { GridFSBucket, type Db, type GridFSBucketReadStream, type GridFSBucketWriteStream } from 'mongodb';

export type BucketName = 'snapshots' | 'files' | 'storage';

/** Blobs (source archives, uploaded files) in GridFS buckets, addressed by the owning record's id. */
export class BlobStore {
  private readonly buckets = new Map<BucketName, GridFSBucket>();

  constructor(private readonly db: Db) {}

  private bucket(name: BucketName): GridFSBucket {
    let b = this.buckets.get(name);
    if (!b) {
      b = new GridFSBucket(this.db, { bucketName: name, chunkSizeBytes: 255 * 1024 });
      this.buckets.set(name, b);
    }
    return b;
  }

  /** A write stream storing the blob under `id`; `metadata` should carry `org_id`. */
  upload(bucket: BucketName, id: string, filename: string, metadata: Record<string, unknown>): GridFSBucketWriteStream {
    return this.bucket(bucket).openUploadStreamWithId(id as never, filename, { metadata });
  }

  download(bucket: BucketName, id: string): GridFSBucketReadStream {
    return this.bucket(bucket).openDownloadStream(id as never);
  }

  async exists(bucket: BucketName, id: string): Promise<{ length: number } | null> {
    const doc = await this.bucket(bucket).find({ _id: id as never }).next();
    return doc ? { length: doc.length } : null;
  }

  /** Removes the blob; a missing blob is not an error (delete is idempotent). */
  async delete(bucket: BucketName, id: string): Promise<void> {
    try {
      await this.bucket(bucket).delete(id as never);
    } catch (err) {
      if (!/File not found/i.test((err as Error).message)) throw err;
    }
  }
}
