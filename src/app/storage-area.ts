import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { chown, lstat, mkdir, readdir } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { newId } from '../domain/ids.js';
import type { BlobStore } from '../store/blobs.js';
import { storageFileId, type StorageBindingStore } from '../store/storage-bindings.js';
import type { StorageFileDoc } from '../domain/views/storage-binding.js';

/** Quotas of one binding (spec: not shown). Files are also capped by the sandbox's RLIMIT_FSIZE (64 MiB). */
export const STORAGE_MAX_BYTES = 1024 * 1024 * 1024;
export const STORAGE_MAX_FILES = 10_000;

export interface AreaOwner {
  /** chown files to the sandbox user (Troupe runs as root and drops to it). */
  uid?: number;
}

interface LocalFile {
  path: string;
  size: number;
}

/** Every regular file under `root`, as `/`-separated relative paths. Links and devices are skipped: they are not storage. */
async function walk(root: string, dir = root, out: LocalFile[] = []): Promise<LocalFile[]> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) await walk(root, full, out);
    else if (entry.isFile()) out.push({ path: relative(root, full).split(sep).join('/'), size: (await lstat(full)).size });
  }
  return out;
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return hash.digest('hex');
}

/**
 * A binding's files as a directory for the length of one tool call. `checkout`
 * copies them from GridFS into a fresh directory; `commit` writes back what
 * changed (by SHA-256), adds new files and removes deleted ones. Concurrent
 * calls on one binding each see the files as of their checkout; on commit the
 * last writer of a path wins, and a path one call deletes is deleted.
 */
export class StorageArea {
  constructor(
    private readonly store: StorageBindingStore,
    private readonly blobs: BlobStore,
    private readonly owner: AreaOwner = {},
  ) {}

  async checkout(orgId: string, bindingId: string, dir: string): Promise<StorageFileDoc[]> {
    const files = await this.store.filesOf(orgId, bindingId);
    for (const f of files) {
      const target = join(dir, ...f.path.split('/'));
      await this.ensureDir(dir, dirname(target));
      await pipeline(this.blobs.download('storage', f.blob_id), createWriteStream(target, { flags: 'wx' }));
      if (this.owner.uid !== undefined) await chown(target, this.owner.uid, this.owner.uid);
    }
    return files;
  }

  /** Writes changes back; a string says why nothing was written (over quota, binding deleted meanwhile). */
  async commit(orgId: string, bindingId: string, dir: string, before: StorageFileDoc[]): Promise<string | null> {
    const local = await walk(dir);
    const total = local.reduce((n, f) => n + f.size, 0);
    if (local.length > STORAGE_MAX_FILES || total > STORAGE_MAX_BYTES) {
      return `storage binding ${bindingId} would hold ${local.length} files and ${total} bytes, over its quota of ${STORAGE_MAX_FILES} files and ${STORAGE_MAX_BYTES} bytes; this call's file changes were not saved`;
    }
    if (!(await this.store.live(orgId, bindingId))) return `storage binding ${bindingId} was deleted; this call's file changes were not saved`;
    const known = new Map(before.map((f) => [f.path, f]));
    for (const f of local) {
      const full = join(dir, ...f.path.split('/'));
      const sha256 = await sha256Of(full);
      const old = known.get(f.path);
      known.delete(f.path);
      if (old && old.sha256 === sha256) continue;
      const blobId = newId('storageBlob');
      await pipeline(createReadStream(full), this.blobs.upload('storage', blobId, f.path, { org_id: orgId, binding_id: bindingId }));
      await this.store.putFile({ _id: storageFileId(bindingId, f.path), org_id: orgId, binding_id: bindingId, path: f.path, blob_id: blobId, size_bytes: f.size, sha256, updated_at: new Date() });
      if (old) await this.blobs.delete('storage', old.blob_id);
    }
    for (const gone of known.values()) {
      await this.store.removeFile(gone._id);
      await this.blobs.delete('storage', gone.blob_id);
    }
    return null;
  }

  /** Removes every file of a binding, blobs first, so no record points at missing bytes. */
  async purge(orgId: string, bindingId: string): Promise<void> {
    for (const f of await this.store.filesOf(orgId, bindingId)) await this.blobs.delete('storage', f.blob_id);
  }

  private async ensureDir(root: string, dir: string): Promise<void> {
    await mkdir(dir, { recursive: true });
    if (this.owner.uid === undefined) return;
    // Directories made for nested paths must be the sandbox user's too, or it cannot add files to them.
    for (let d = dir; d.startsWith(root) && d !== root; d = dirname(d)) await chown(d, this.owner.uid, this.owner.uid);
  }
}
