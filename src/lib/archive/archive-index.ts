import { dirname, isAbsolute, segmentsOf } from './paths.js';

export interface EntryInfo {
  type: 'file' | 'directory' | 'symlink' | 'link';
  size: number;
  /** Symlinks: the target as written. Hardlinks: the root-relative path of the linked entry. */
  linkname?: string;
}

/** Resolution would leave the root, or loops. */
export class LinkError extends Error {}

const MAX_HOPS = 40;

/**
 * The archive's entries by canonical path, and path resolution over them the
 * way an extractor's filesystem would do it: a symlink met on the way is
 * expanded, so `..` after a link is applied to where the link really points.
 */
export class ArchiveIndex {
  readonly entries = new Map<string, EntryInfo>();

  /** Resolves `ref` from directory `base`; throws LinkError when it leaves the root or loops. */
  resolve(base: string, ref: string, hops = { n: 0 }): string {
    if (isAbsolute(ref)) throw new LinkError('absolute target');
    const stack = base === '' ? [] : base.split('/');
    for (const seg of segmentsOf(ref)) {
      if (/^[A-Za-z]:/.test(seg)) throw new LinkError('names a drive');
      if (seg === '..') {
        if (stack.length === 0) throw new LinkError('leaves the archive root');
        stack.pop();
        continue;
      }
      stack.push(seg);
      const here = stack.join('/');
      const e = this.entries.get(here);
      if (e?.type === 'symlink') {
        if (++hops.n > MAX_HOPS) throw new LinkError('too many levels of links');
        const target = this.resolve(dirname(here), e.linkname!, hops);
        stack.length = 0;
        if (target !== '') stack.push(...target.split('/'));
      }
    }
    return stack.join('/');
  }

  /** Throws LinkError for the first symlink whose target leaves the root. */
  checkLinks(): void {
    for (const [path, e] of this.entries) {
      if (e.type !== 'symlink') continue;
      try {
        this.resolve(dirname(path), e.linkname!);
      } catch (err) {
        throw new LinkError(`symlink ${path} -> ${e.linkname} ${(err as Error).message}`);
      }
    }
  }

  /** The real path of a regular file reachable at `path`, following links; null if there is none. */
  realFile(path: string): string | null {
    let p: string;
    try {
      p = this.resolve('', path);
    } catch {
      return null;
    }
    for (let i = 0; i < MAX_HOPS; i++) {
      const e = this.entries.get(p);
      if (!e) return null;
      if (e.type === 'file') return p;
      if (e.type !== 'link') return null;
      p = e.linkname!;
    }
    return null;
  }
}
