import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { extract as tarExtract, type ExtractEvents, type Header } from 'tar-stream';
import { ArchiveIndex, LinkError, type EntryInfo } from './archive-index.js';
import { ancestors, entryPath, isAbsolute, PathError } from './paths.js';

export interface ArchiveLimits {
  maxEntries: number;
  /** Cap on the decompressed tar stream (headers included); cuts a gzip bomb off while it inflates. */
  maxUnpackedBytes: number;
  /** Cap on one file read into memory (manifest-named JSON files). */
  maxFileBytes: number;
}

export const DEFAULT_ARCHIVE_LIMITS: ArchiveLimits = Object.freeze({
  maxEntries: 10_000,
  maxUnpackedBytes: 100 * 1024 * 1024,
  maxFileBytes: 1024 * 1024,
});

export type ArchiveErrorCode =
  | 'archive_not_gzip'
  | 'archive_not_tar'
  | 'archive_absolute_path'
  | 'archive_path_traversal'
  | 'archive_bad_path'
  | 'archive_link_escape'
  | 'archive_unsupported_entry'
  | 'archive_too_many_entries'
  | 'archive_too_large'
  | 'archive_file_too_large';

/** The archive is unacceptable; the message says which entry and why. */
export class ArchiveError extends Error {
  constructor(
    message: string,
    readonly code: ArchiveErrorCode,
  ) {
    super(message);
  }
}

export interface ArchiveScan {
  index: ArchiveIndex;
  /** Contents of the requested files (by canonical path) that are regular files in the archive. */
  files: Map<string, Buffer>;
}

const TYPES: Record<string, EntryInfo['type']> = { file: 'file', 'contiguous-file': 'file', directory: 'directory', symlink: 'symlink', link: 'link' };

/** Checks one header against the rules and the entries seen so far; returns its canonical path and record. */
function admit(h: Header, index: ArchiveIndex, dirs: Set<string>): [string, EntryInfo] | null {
  let path: string;
  try {
    path = entryPath(h.name);
  } catch (e) {
    if (e instanceof PathError) throw new ArchiveError(`Archive ${e.message}.`, `archive_${e.code}`);
    throw e;
  }
  const type = TYPES[h.type ?? 'file'];
  if (!type) throw new ArchiveError(`Archive entry ${path} is a ${h.type}; only files, directories and links are allowed.`, 'archive_unsupported_entry');
  if (path === '') return null;
  for (const dir of ancestors(path)) {
    if (index.entries.get(dir)?.type === 'symlink') throw new ArchiveError(`Archive entry ${path} lies under the symlink ${dir}.`, 'archive_link_escape');
    dirs.add(dir);
  }
  const info: EntryInfo = { type, size: type === 'file' ? (h.size ?? 0) : 0 };
  if (type === 'symlink') {
    const target = h.linkname ?? '';
    if (isAbsolute(target)) throw new ArchiveError(`Archive symlink ${path} -> ${target} points to an absolute path.`, 'archive_link_escape');
    if (dirs.has(path) || index.entries.get(path)?.type === 'directory') throw new ArchiveError(`Archive symlink ${path} replaces a directory.`, 'archive_link_escape');
    info.linkname = target;
  } else if (type === 'link') {
    let target: string;
    try {
      target = entryPath(h.linkname ?? '');
    } catch {
      throw new ArchiveError(`Archive hardlink ${path} -> ${h.linkname} leaves the archive root.`, 'archive_link_escape');
    }
    if (!index.entries.has(target)) throw new ArchiveError(`Archive hardlink ${path} -> ${h.linkname} names no earlier entry.`, 'archive_link_escape');
    info.linkname = target;
  } else if (type === 'directory') dirs.add(path);
  return [path, info];
}

/** A tar entry's body (a streamx stream). */
type EntryStream = ExtractEvents['entry'][1];

function readAll(stream: EntryStream, limit: number, path: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (data) => {
      const c = data as Buffer;
      size += c.length;
      if (size > limit) reject(new ArchiveError(`Archive file ${path} is larger than ${limit} bytes.`, 'archive_file_too_large'));
      else chunks.push(c);
    });
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

function drain(stream: EntryStream): Promise<void> {
  return new Promise<void>((res, rej) => {
    stream.on('end', () => res());
    stream.on('error', rej);
    stream.resume();
  });
}

/** One pass over one archive: the streams, the counters and what has been learnt so far. */
class Scan {
  readonly index = new ArchiveIndex();
  readonly files = new Map<string, Buffer>();
  private readonly dirs = new Set<string>();
  private readonly gunzip = createGunzip();
  private readonly extract = tarExtract();
  private inflated = 0;
  private declared = 0;
  private count = 0;
  private settled = false;

  constructor(
    private readonly source: Readable,
    private readonly want: ReadonlySet<string>,
    private readonly limits: ArchiveLimits,
    private readonly resolve: (scan: ArchiveScan) => void,
    private readonly reject: (err: Error) => void,
  ) {}

  start(): void {
    const { source, gunzip, extract } = this;
    source.on('error', (e) => this.fail(e));
    gunzip.on('error', (e) => this.fail(new ArchiveError(`The snapshot is not a valid gzip stream (${e.message}).`, 'archive_not_gzip')));
    extract.on('error', (e: Error) => this.fail(e instanceof ArchiveError ? e : new ArchiveError(`The snapshot is not a valid tar archive (${e.message}).`, 'archive_not_tar')));
    gunzip.on('data', (chunk: Buffer) => this.inflate(chunk));
    gunzip.on('end', () => extract.end(undefined));
    extract.on('entry', (header, stream, next) => this.entry(header, stream).then(() => next(), (e: Error) => this.fail(e)));
    extract.on('finish', () => this.finish());
    source.pipe(gunzip);
  }

  private tooLarge(): ArchiveError {
    return new ArchiveError(`The archive unpacks to more than ${this.limits.maxUnpackedBytes} bytes.`, 'archive_too_large');
  }

  /** Counts inflated bytes before the tar parser sees them, so a bomb stops here whatever its tar headers claim. */
  private inflate(chunk: Buffer): void {
    this.inflated += chunk.length;
    if (this.inflated > this.limits.maxUnpackedBytes) return this.fail(this.tooLarge());
    if (!this.extract.write(chunk)) {
      this.gunzip.pause();
      this.extract.once('drain', () => this.gunzip.resume());
    }
  }

  private async entry(header: Header, stream: EntryStream): Promise<void> {
    if (++this.count > this.limits.maxEntries) throw new ArchiveError(`The archive has more than ${this.limits.maxEntries} entries.`, 'archive_too_many_entries');
    this.declared += header.size ?? 0;
    if (this.declared > this.limits.maxUnpackedBytes) throw this.tooLarge();
    const admitted = admit(header, this.index, this.dirs);
    if (admitted) this.index.entries.set(admitted[0], admitted[1]);
    if (admitted && admitted[1].type === 'file' && this.want.has(admitted[0])) {
      this.files.set(admitted[0], await readAll(stream, this.limits.maxFileBytes, admitted[0]));
    } else await drain(stream);
  }

  private finish(): void {
    if (this.settled) return;
    try {
      this.index.checkLinks();
    } catch (e) {
      return this.fail(e instanceof LinkError ? new ArchiveError(`Archive ${e.message}.`, 'archive_link_escape') : (e as Error));
    }
    this.settled = true;
    this.resolve({ index: this.index, files: this.files });
  }

  private fail(err: Error): void {
    if (this.settled) return;
    this.settled = true;
    this.source.unpipe(this.gunzip);
    this.source.destroy();
    this.gunzip.destroy();
    this.extract.destroy();
    this.reject(err);
  }
}

/**
 * Streams a .tar.gz through gunzip and a tar parser, never touching the disk:
 * every entry is checked as its header arrives, the inflated byte count is
 * capped while inflating, and the files named in `want` are kept in memory.
 */
export function scanArchive(source: Readable, want: ReadonlySet<string>, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS): Promise<ArchiveScan> {
  return new Promise<ArchiveScan>((resolve, reject) => new Scan(source, want, limits, resolve, reject).start());
}
