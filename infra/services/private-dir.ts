import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Entries walked at most: a data folder holds a handful of files per server; the bound keeps a stray huge tree from stalling a start. */
const MAX_ENTRIES = 10_000;

/**
 * Makes `dir` (created if missing) 0700 and takes group and other access off
 * everything already under it. The data folder holds message text (MongoDB's
 * file, Redis's AOF) and the dev keys; folders made by older versions were 0755
 * with 0644 files. Symlinks are left alone: their targets are not ours to change.
 */
export function makePrivate(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const pending = [dir];
  let seen = 0;
  while (pending.length && seen < MAX_ENTRIES) {
    const d = pending.pop()!;
    for (const name of readdirSync(d)) {
      if (++seen > MAX_ENTRIES) break;
      const path = join(d, name);
      const st = lstatSync(path);
      if (st.isSymbolicLink()) continue;
      if (st.mode & 0o077) chmodSync(path, st.mode & 0o700);
      if (st.isDirectory()) pending.push(path);
    }
  }
}
