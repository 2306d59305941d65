import { existsSync, readdirSync, statSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { posix } from 'node:path';
import type { Node, SourceFile } from 'typescript/unstable/ast';

/**
 * The import graph of the sources, read with the TypeScript parser (tsgo, through its API) rather than patterns, so
 * that an import named in a comment or a string is no edge and every form of import is one.
 */

/** How a module is referred to; `import type()` is `import('x').T` or `typeof import('x')` in a type. */
export type ImportForm = 'import' | 'export from' | 'side effect' | 'import = require' | 'require' | 'import()' | 'import type()';

/** One module reference as the source writes it. */
export interface ImportRef {
  specifier: string;
  form: ImportForm;
  /** Erased at compile time: `import type`, `export type`, all-`type` named bindings, `import type x = require`, `import()` in a type. */
  typeOnly: boolean;
}

/** An edge of the graph, between repository-relative paths (`src/store/x.ts`), or to a package (`bullmq`, `node:fs`). */
export interface Edge {
  from: string;
  to: string;
  typeOnly: boolean;
  /** A relative specifier that names no file (a parse or resolution gap, reported by the test). */
  unresolved?: boolean;
}

/** Every .ts source (not .d.ts) under `dirs` of `root`, repository-relative, sorted. */
export function sourcesUnder(root: string, dirs: readonly string[]): string[] {
  const walk = (rel: string): string[] =>
    readdirSync(posix.join(root, rel)).flatMap((name) => {
      const p = posix.join(rel, name);
      if (name === 'node_modules') return [];
      if (statSync(posix.join(root, p)).isDirectory()) return walk(p);
      return p.endsWith('.ts') && !p.endsWith('.d.ts') ? [p] : [];
    });
  return dirs.flatMap(walk).sort();
}

/** Where a specifier written in `from` points: a repository-relative file (`.js` → `.ts`, a folder → its index.ts) or a package. */
export function resolveImport(from: string, specifier: string, exists: (path: string) => boolean): Pick<Edge, 'to' | 'unresolved'> {
  if (!specifier.startsWith('.') && !specifier.startsWith('/')) {
    return { to: isBuiltin(specifier) && !specifier.startsWith('node:') ? `node:${specifier}` : specifier };
  }
  const base = posix.normalize(posix.join(posix.dirname(from), specifier));
  const candidates = [base.replace(/\.js$/, '.ts').replace(/\.mjs$/, '.mts').replace(/\.cjs$/, '.cts'), base, `${base}.ts`, `${base}/index.ts`];
  const found = candidates.find((c) => exists(c));
  return found ? { to: found } : { to: base, unresolved: true };
}

/** The package an edge ends at (`node:fs` for `node:fs/promises`, `@scope/name` for `@scope/name/sub`), or null for a file. */
export function packageOf(to: string): string | null {
  if (to.startsWith('node:')) return to.split('/')[0];
  if (/^(src|actors|infra|clients|bench|test|examples)\//.test(to) || !/^[@a-z0-9]/i.test(to)) return null;
  const parts = to.split('/');
  return to.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

type Kinds = typeof import('typescript/unstable/ast').SyntaxKind;

/** The module references of one parsed file, in source order. */
function importsOf(sf: SourceFile, K: Kinds): ImportRef[] {
  // Only subtrees whose text holds `import`, `export` or `require` can hold a reference: skip the rest (most of the tree).
  const hits: number[] = [];
  for (const word of ['import', 'export', 'require']) for (let i = sf.text.indexOf(word); i >= 0; i = sf.text.indexOf(word, i + 1)) hits.push(i);
  hits.sort((a, b) => a - b);
  const holdsHit = (node: Node) => {
    let [lo, hi] = [0, hits.length];
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (hits[mid] < node.pos) lo = mid + 1;
      else hi = mid;
    }
    return lo < hits.length && hits[lo] < node.end;
  };
  const literal = (n: Node | undefined): string | null => (n && (n.kind === K.StringLiteral || n.kind === K.NoSubstitutionTemplateLiteral) ? (n as unknown as { text: string }).text : null);
  const allTypeOnly = (elements: readonly { isTypeOnly: boolean }[] | undefined) => !!elements && elements.length > 0 && elements.every((e) => e.isTypeOnly);
  const refs: ImportRef[] = [];
  const add = (specifier: string | null, form: ImportForm, typeOnly: boolean) => specifier !== null && refs.push({ specifier, form, typeOnly });
  const visit = (node: Node): void => {
    if (!holdsHit(node)) return;
    const n = node as any; // the case's kind fixes the node's shape
    switch (node.kind) {
      case K.ImportDeclaration: {
        const clause = n.importClause;
        if (!clause) add(literal(n.moduleSpecifier), 'side effect', false);
        else add(literal(n.moduleSpecifier), 'import', clause.phaseModifier === K.TypeKeyword || (!clause.name && clause.namedBindings?.kind === K.NamedImports && allTypeOnly(clause.namedBindings.elements)));
        return;
      }
      case K.ExportDeclaration:
        if (n.moduleSpecifier) add(literal(n.moduleSpecifier), 'export from', n.isTypeOnly || (n.exportClause?.kind === K.NamedExports && allTypeOnly(n.exportClause.elements)));
        return;
      case K.ImportEqualsDeclaration:
        if (n.moduleReference.kind === K.ExternalModuleReference) add(literal(n.moduleReference.expression), 'import = require', n.isTypeOnly);
        return;
      case K.ImportType:
        if (n.argument.kind === K.LiteralType) add(literal(n.argument.literal), 'import type()', true);
        break;
      case K.CallExpression:
        if (n.expression.kind === K.ImportKeyword) add(literal(n.arguments[0]), 'import()', false);
        else if (n.expression.kind === K.Identifier && n.expression.text === 'require' && n.arguments.length === 1) add(literal(n.arguments[0]), 'require', false);
        break;
    }
    node.forEachChild(visit);
  };
  sf.forEachChild(visit);
  return refs;
}

/**
 * Parses `files` (absolute paths; a file given a text in `texts` is parsed from it instead of the disk) in one tsgo
 * process, as a program of only these files (no lib, no resolution: parsing only), and returns each file's references.
 */
export async function parseImports(files: readonly string[], texts: ReadonlyMap<string, string> = new Map()): Promise<Map<string, ImportRef[]>> {
  const [{ API }, { SyntaxKind }] = await Promise.all([import('typescript/unstable/sync'), import('typescript/unstable/ast')]);
  // A tsconfig that exists only for tsgo, handed over through its file system hooks like the made-up texts.
  const config = '/architecture-graph/tsconfig.json';
  const virtual = new Map(texts).set(config, JSON.stringify({ compilerOptions: { noLib: true, noResolve: true, types: [] }, files }));
  const api = new API({ fs: { readFile: (f) => virtual.get(f), fileExists: (f) => (virtual.has(f) ? true : undefined) } });
  try {
    const project = api.updateSnapshot({ openProjects: [config] }).getProject(config);
    if (!project) throw new Error(`tsgo opened no project for ${config}`);
    const out = new Map<string, ImportRef[]>();
    for (const file of files) {
      const sf = project.program.getSourceFile(file);
      if (!sf) throw new Error(`tsgo did not parse ${file}`);
      out.set(file, importsOf(sf, SyntaxKind));
    }
    return out;
  } finally {
    api.close();
  }
}

/** The edges of the file `from` (repository-relative) given its references. */
export function edgesOf(from: string, refs: readonly ImportRef[], exists: (path: string) => boolean): Edge[] {
  return refs.map((r) => ({ from, typeOnly: r.typeOnly, ...resolveImport(from, r.specifier, exists) }));
}

/** Whether `path` (repository-relative) is a file of the checkout at `root`. */
export const fileIn = (root: string) => (path: string) => existsSync(posix.join(root, path)) && statSync(posix.join(root, path)).isFile();
