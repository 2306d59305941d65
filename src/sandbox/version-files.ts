import { chmod, chown, mkdir, mkdtemp, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { manifestPath } from '../agents/paths.js';
import { extractArchive, insideRoot } from './extract.js';
import { SANDBOX_UID } from './types.js';

/** A per-call scratch directory and how to remove it. */
export interface Scratch {
  path: string;
  remove(): Promise<void>;
}

export interface VersionRef {
  _id: string;
  snapshot_id: string;
}

const SAFE_ID = /^[A-Za-z0-9_-]{1,128}$/;

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The extracted files of agent versions, under `<base>/versions/<version id>`,
 * each extracted once and then reused (versions are immutable). A version
 * appears only by an atomic rename of a finished extraction, so a directory
 * that exists is complete, even with several processes sharing `base`.
 */
export class VersionFiles {
  private readonly inflight = new Map<string, Promise<string>>();
  private prepared: Promise<void> | null = null;

  constructor(
    private readonly base: string,
    private readonly openSnapshot: (snapshotId: string) => Readable,
    /** Make scratch dirs writable by the unprivileged sandbox user. */
    private readonly dropUser: boolean,
  ) {}

  /** The directory holding the version's files, extracting them first if needed. */
  dirFor(version: VersionRef): Promise<string> {
    if (!SAFE_ID.test(version._id)) return Promise.reject(new Error(`unexpected version id ${JSON.stringify(version._id)}`));
    let p = this.inflight.get(version._id);
    if (!p) {
      p = this.ensure(version).finally(() => this.inflight.delete(version._id));
      this.inflight.set(version._id, p);
    }
    return p;
  }

  /**
   * The sandbox user must traverse the base directory (but need not list
   * it), which a private temp dir given as TROUPE_SANDBOX_DIR would forbid.
   */
  private prepare(): Promise<void> {
    this.prepared ??= (async () => {
      await mkdir(join(this.base, 'versions'), { recursive: true, mode: 0o755 });
      await mkdir(join(this.base, 'scratch'), { recursive: true, mode: 0o711 });
      if (this.dropUser) await chmod(this.base, ((await stat(this.base)).mode & 0o777) | 0o111);
    })().catch((err: Error) => {
      this.prepared = null; // a transient failure (disk full) should not stick
      throw err;
    });
    return this.prepared;
  }

  private async ensure(version: VersionRef): Promise<string> {
    const dir = join(this.base, 'versions', version._id);
    if (await exists(dir)) return dir;
    await this.prepare();
    const tmp = await mkdtemp(join(this.base, 'versions', `.partial-${version._id}-`));
    try {
      await extractArchive(() => this.openSnapshot(version.snapshot_id), tmp);
      await chmod(tmp, 0o755); // mkdtemp makes it 0700; the sandbox user must traverse it
      await rename(tmp, dir);
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      // Another process finished the same version first: theirs is as good as ours.
      if (await exists(dir)) return dir;
      throw err;
    }
    return dir;
  }

  /** Absolute path of a manifest path inside the version directory; throws if it would leave it. */
  static fileIn(dir: string, path: string): string {
    const p = manifestPath(path);
    if (!p) throw new Error(`tool path ${JSON.stringify(path)} leaves the archive`);
    return insideRoot(dir, p);
  }

  /** A fresh scratch directory, private to one call. */
  async scratch(): Promise<Scratch> {
    await this.prepare();
    const path = await mkdtemp(join(this.base, 'scratch', 'call-'));
    if (this.dropUser) await chown(path, SANDBOX_UID, SANDBOX_UID);
    return { path, remove: () => rm(path, { recursive: true, force: true }) };
  }
}
