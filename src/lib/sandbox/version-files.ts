import { randomBytes } from 'node:crypto';
import { chmod, chown, lstat, mkdir, mkdtemp, readdir, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { manifestPath } from '../archive/paths.js';
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

/** A version's directory, held for one call: it is not evicted until `release` (idempotent). */
export interface VersionLease {
  dir: string;
  release(): void;
}

const SAFE_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** Apparent bytes of everything under `path` (links counted as themselves, never followed). */
async function treeBytes(path: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(path, { withFileTypes: true })) {
    const p = join(path, e.name);
    total += e.isDirectory() ? await treeBytes(p) : (await lstat(p)).size;
  }
  return total;
}

/** Whether process `pid` still runs (EPERM: it does, under another user). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

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
 *
 * With `maxBytes`, versions are evicted least recently used (a lease touches
 * its directory's mtime) once the extracted versions pass that size, and
 * extracted again when next used. A version under lease is never evicted, by
 * this process or another sharing `base`: each process holding a version
 * keeps a file `leases/<version id>.<pid>-<instance>` while it does (a dead pid's file
 * counts for nothing).
 */
export class VersionFiles {
  private readonly inflight = new Map<string, Promise<string>>();
  private prepared: Promise<void> | null = null;
  /** This process's leases per version. */
  private readonly held = new Map<string, number>();
  /** Sizes of extracted versions, measured once (versions are immutable). */
  private readonly sizes = new Map<string, number>();
  /** Passes of `trim` run one after another. */
  private trimming: Promise<void> = Promise.resolve();
  /** Tells this instance's lease files from another's in the same process. */
  private readonly instance = randomBytes(4).toString('hex');

  constructor(
    private readonly base: string,
    private readonly openSnapshot: (snapshotId: string) => Readable,
    /** Make scratch dirs writable by the unprivileged sandbox user. */
    private readonly dropUser: boolean,
    /** The extracted versions' size at most before the least recently used go; 0 = no cap. */
    private readonly maxBytes = 0,
  ) {}

  /** The version's directory, held until `release`: extracted first if needed, and marked as just used. */
  async lease(version: VersionRef): Promise<VersionLease> {
    if (!SAFE_ID.test(version._id)) throw new Error(`unexpected version id ${JSON.stringify(version._id)}`);
    const id = version._id;
    await this.hold(id);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      void this.unhold(id);
    };
    try {
      const dir = await this.dirFor(version);
      const now = new Date();
      await utimes(dir, now, now).catch(() => undefined);
      return { dir, release };
    } catch (err) {
      release();
      throw err;
    }
  }

  private leaseFile(id: string): string {
    return join(this.base, 'leases', `${id}.${process.pid}-${this.instance}`);
  }

  private async hold(id: string): Promise<void> {
    const n = this.held.get(id) ?? 0;
    this.held.set(id, n + 1);
    if (n > 0 || !this.maxBytes) return;
    try {
      await this.prepare();
      await writeFile(this.leaseFile(id), '');
    } catch (err) {
      this.held.set(id, (this.held.get(id) ?? 1) - 1);
      throw err;
    }
  }

  private async unhold(id: string): Promise<void> {
    const n = (this.held.get(id) ?? 1) - 1;
    if (n > 0) return void this.held.set(id, n);
    this.held.delete(id);
    if (this.maxBytes) await rm(this.leaseFile(id), { force: true }).catch(() => undefined);
  }

  /** Versions under lease by any live process sharing `base`; a dead process's lease files are removed. */
  private async leased(): Promise<Set<string>> {
    const ids = new Set(this.held.keys());
    const dir = join(this.base, 'leases');
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      const dot = name.lastIndexOf('.');
      const pid = Number.parseInt(name.slice(dot + 1), 10);
      if (dot > 0 && pid > 0 && alive(pid)) ids.add(name.slice(0, dot));
      else await rm(join(dir, name), { force: true }).catch(() => undefined);
    }
    return ids;
  }

  /** Evicts least recently used versions not under lease until the rest fit `maxBytes`. */
  trim(): Promise<void> {
    if (!this.maxBytes) return Promise.resolve();
    this.trimming = this.trimming.then(() => this.trimOnce()).catch(() => undefined);
    return this.trimming;
  }

  private async trimOnce(): Promise<void> {
    const root = join(this.base, 'versions');
    const names = await readdir(root);
    // What an eviction cut short (a crash between its rename and its removal) goes now.
    await Promise.all(names.filter((n) => n.startsWith('.evicted-')).map((n) => rm(join(root, n), { recursive: true, force: true })));
    const found = await Promise.all(
      names.filter((n) => !n.startsWith('.')).map(async (name) => {
        const dir = join(root, name);
        const size = this.sizes.get(name) ?? (await treeBytes(dir).catch(() => 0));
        this.sizes.set(name, size);
        return { name, dir, size, used: (await stat(dir).catch(() => null))?.mtimeMs ?? 0 };
      }),
    );
    let total = found.reduce((t, v) => t + v.size, 0);
    if (total <= this.maxBytes) return;
    const inUse = await this.leased();
    for (const v of found.sort((a, b) => a.used - b.used)) {
      if (total <= this.maxBytes) break;
      if (inUse.has(v.name)) continue;
      // Renamed first, so no reader finds a half-removed version; a lease taken meanwhile gets it back.
      const gone = join(root, `.evicted-${v.name}-${randomBytes(4).toString('hex')}`);
      if (!(await rename(v.dir, gone).then(() => true, () => false))) continue;
      if ((await this.leased()).has(v.name) && (await rename(gone, v.dir).then(() => true, () => false))) continue;
      await rm(gone, { recursive: true, force: true });
      this.sizes.delete(v.name);
      total -= v.size;
    }
  }

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
      if (this.maxBytes) await mkdir(join(this.base, 'leases'), { recursive: true, mode: 0o700 });
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
    // Room for what was just added; a failed pass leaves the disk over its cap until the next extraction.
    await this.trim();
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
