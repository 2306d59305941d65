/**
 * Path rules for archive entries and for the paths a manifest or a tool
 * definition names. Everything is relative to the archive root and written
 * with `/`; nothing may point outside the root.
 */

export class PathError extends Error {
  constructor(
    message: string,
    readonly code: 'absolute_path' | 'path_traversal' | 'bad_path',
  ) {
    super(message);
  }
}

const DRIVE = /^[A-Za-z]:/;

function isAbsolute(p: string): boolean {
  return p.startsWith('/') || p.startsWith('\\') || DRIVE.test(p);
}

/**
 * An archive entry name in canonical form (`./a//b/` → `a/b`); '' for the
 * root itself. Absolute names and any `..` segment are refused outright, as
 * an extractor could follow them out of its target directory.
 */
export function entryPath(name: string): string {
  if (name.includes('\0')) throw new PathError(`entry name ${JSON.stringify(name)} contains a NUL byte`, 'bad_path');
  if (isAbsolute(name)) throw new PathError(`entry ${JSON.stringify(name)} has an absolute path`, 'absolute_path');
  const segments = name.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.includes('..')) throw new PathError(`entry ${JSON.stringify(name)} contains ".."`, 'path_traversal');
  return segments.join('/');
}

/**
 * Resolves `ref` against the directory `base` ('' = root), allowing `..` only
 * while it stays inside the root. Null when it would leave the root.
 */
export function resolveInside(base: string, ref: string): string | null {
  if (ref.includes('\0') || isAbsolute(ref)) return null;
  const stack = base === '' ? [] : base.split('/');
  for (const seg of ref.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (stack.length === 0) return null;
      stack.pop();
    } else stack.push(seg);
  }
  return stack.join('/');
}

export function dirname(path: string): string {
  const i = path.lastIndexOf('/');
  return i < 0 ? '' : path.slice(0, i);
}

/** Every proper ancestor directory of a path: `a/b/c` → `a`, `a/b`. */
export function ancestors(path: string): string[] {
  const parts = path.split('/');
  const out: string[] = [];
  for (let i = 1; i < parts.length; i++) out.push(parts.slice(0, i).join('/'));
  return out;
}

/** A path named by the manifest: relative, inside the root, naming a file. */
export function manifestPath(ref: string): string | null {
  const p = resolveInside('', ref);
  return p ? p : null;
}
