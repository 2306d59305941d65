import { createWriteStream } from 'node:fs';
import { copyFile, mkdir, rm, symlink } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { extract as tarExtract, type Header } from 'tar-stream';
import type { ArchiveIndex } from '../archive/archive-index.js';
import { ArchiveError, DEFAULT_ARCHIVE_LIMITS, scanArchive, type ArchiveLimits } from '../archive/archive-scan.js';
import { entryPath } from '../archive/paths.js';

/** `rel` under `root`, refusing anything that would land outside it (a second line of defence after the scan). */
export function insideRoot(root: string, rel: string): string {
  const target = join(root, rel);
  const back = relative(root, target);
  if (back === '' || back.startsWith('..') || back.startsWith(sep)) throw new ArchiveError(`Archive entry ${JSON.stringify(rel)} leaves the extraction root.`, 'archive_path_traversal');
  return target;
}

/** Writes regular files and directories; links wait until everything else exists (see extractArchive). */
async function writeEntry(root: string, index: ArchiveIndex, header: Header, body: Readable): Promise<void> {
  const path = entryPath(header.name);
  const kind = header.type === 'contiguous-file' ? 'file' : header.type;
  // Skip the root, links, and entries a later duplicate superseded with another type.
  if (path === '' || (kind !== 'file' && kind !== 'directory') || index.entries.get(path)?.type !== kind) {
    body.resume();
    return;
  }
  const target = insideRoot(root, path);
  if (kind === 'directory') {
    body.resume();
    await mkdir(target, { recursive: true, mode: 0o755 });
    return;
  }
  await mkdir(dirname(target), { recursive: true, mode: 0o755 });
  await rm(target, { force: true, recursive: true });
  // `wx` never follows a symlink or reuses a file: the entry is a new file or the extraction fails.
  await pipeline(body, createWriteStream(target, { flags: 'wx', mode: 0o644 }));
}

/**
 * Symlinks (already proven by the scan to resolve inside the root) and
 * hardlinks (materialised as copies) are made last, so no file write above
 * can ever go through a link.
 */
async function writeLinks(root: string, index: ArchiveIndex): Promise<void> {
  for (const [path, e] of index.entries) {
    if (e.type !== 'symlink' && e.type !== 'link') continue;
    const target = insideRoot(root, path);
    await mkdir(dirname(target), { recursive: true, mode: 0o755 });
    await rm(target, { force: true, recursive: true });
    if (e.type === 'symlink') await symlink(e.linkname!, target);
    else {
      const real = index.realFile(e.linkname!);
      if (real) await copyFile(insideRoot(root, real), target);
    }
  }
}

function unpack(root: string, index: ArchiveIndex, source: Readable): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const gunzip = createGunzip();
    const ex = tarExtract();
    const fail = (e: Error) => {
      source.destroy();
      gunzip.destroy();
      ex.destroy();
      reject(e);
    };
    source.on('error', fail);
    gunzip.on('error', fail);
    ex.on('error', fail);
    ex.on('entry', (header, body, next) => writeEntry(root, index, header, body as unknown as Readable).then(() => next(), fail));
    ex.on('finish', resolve);
    source.pipe(gunzip).pipe(ex);
  });
}

/**
 * Extracts a .tar.gz into `root` (an empty directory). The archive is first
 * scanned with the same rules as at publish (paths, links, sizes, entry
 * count), then unpacked from a second read; `open` is called once per read.
 */
export async function extractArchive(open: () => Readable, root: string, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS): Promise<void> {
  const { index } = await scanArchive(open(), new Set(), limits);
  await unpack(root, index, open());
  await writeLinks(root, index);
}
