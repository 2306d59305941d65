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
/**
 * Both slashes separate segments: an extractor on Windows (or a user unpacking
 * the archive there) reads `..\\evil` as a climb out of the root.
 */
const SEPARATOR = /[\\/]/;

export function isAbsolute(p: string): boolean {
  return p.startsWith('/') || p.startsWith('\\') || DRIVE.test(p);
}

/** Path segments split on either slash, without empty and `.` segments. */
export function segmentsOf(p: string): string[] {
  return p.split(SEPARATOR).filter((s) => s !== '' && s !== '.');
}

/** A segment like `C:` or `C:evil` names a drive (relative to its current directory), which is outside any root. */
function namesDrive(segments: string[]): boolean {
  return segments.some((s) => DRIVE.test(s));
}

/**
 * An archive entry name in canonical form (`./a//b/` → `a/b`); '' for the
 * root itself. Absolute names and any `..` segment are refused outright, as
 * an extractor could follow them out of its target directory.
 */
export function entryPath(name: string): string {
  if (name.includes('\0')) throw new PathError(`entry name ${JSON.stringify(name)} contains a NUL byte`, 'bad_path');
  const segments = segmentsOf(name);
  if (isAbsolute(name) || namesDrive(segments)) throw new PathError(`entry ${JSON.stringify(name)} has an absolute path`, 'absolute_path');
  if (segments.includes('..')) throw new PathError(`entry ${JSON.stringify(name)} contains ".."`, 'path_traversal');
  return segments.join('/');
}

/**
 * Resolves `ref` against the directory `base` ('' = root), allowing `..` only
 * while it stays inside the root. Null when it would leave the root.
 */
export function resolveInside(base: string, ref: string): string | null {
  const segments = segmentsOf(ref);
  if (ref.includes('\0') || isAbsolute(ref) || namesDrive(segments)) return null;
  const stack = base === '' ? [] : base.split('/');
  for (const seg of segments) {
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
