import { packageOf, type Edge } from './architecture-graph.js';

/**
 * The dependency rules of docs/architecture.md, as functions of one import edge (or, for the last two, of the
 * whole graph and of the actor folders). Each returns why an edge breaks it, or null; docs/architecture.md states
 * exactly these, so a rule written there is a rule this file can fail.
 */

/** The layers, top to bottom: an import may point to its own layer or a lower one, never up (type-only imports too). */
export const LAYERS: readonly { name: string; folders: readonly string[] }[] = [
  { name: 'entry', folders: ['src/main.ts', 'src/roles', 'src/admin', 'infra', 'clients', 'bench', 'test', 'sdks'] },
  { name: 'edge', folders: ['src/edge'] },
  { name: 'actors', folders: ['actors'] },
  { name: 'app', folders: ['src/app'] },
  { name: 'lib', folders: ['src/lib'] },
  { name: 'store', folders: ['src/store'] },
  { name: 'domain', folders: ['src/domain'] },
];

/** The folders the graph is read from: every layer's files, and so every importer. */
export const SCANNED = ['src', 'actors', 'infra', 'clients', 'bench', 'test', 'sdks'];

export const under = (folder: string) => (path: string) => path === folder || path.startsWith(`${folder}/`);
const inAny = (folders: readonly string[], path: string) => folders.some((f) => under(f)(path));

export function layerOf(path: string): number {
  return LAYERS.findIndex((l) => inAny(l.folders, path));
}

const actorOf = (path: string) => /^actors\/([^/]+)\//.exec(path)?.[1] ?? null;

/** Decision code: pure functions over state, unit-tested directly; the session actor's decision is split over several files. */
export const isDecisionFile = (path: string) => /^actors\/[^/]+\/(decide|decision|loop|projection|schedule)\.ts$/.test(path) || under('src/domain')(path);

/** What decision code may not reach: the network, the file system, processes, the queue, the databases, the store. */
export const IO_PACKAGES = ['bullmq', 'ioredis', 'mongodb', 'undici', 'koa', 'pino', 'node:http', 'node:https', 'node:http2', 'node:net', 'node:tls', 'node:dgram', 'node:dns', 'node:fs', 'node:child_process', 'node:worker_threads', 'node:cluster'];
const isIo = (to: string) => IO_PACKAGES.includes(packageOf(to) ?? '') || under('src/store')(to);

/** The npm packages the domain may use besides node's builtins: pure computation, no I/O. */
export const DOMAIN_PACKAGES = ['ulid'];

/** Packages the domain may import types from, never values: json-schema-to-ts derives event types from their schemas. */
export const DOMAIN_TYPE_PACKAGES = ['json-schema-to-ts'];

/** Where Redis and BullMQ may be imported from, outside entry code; the last two by name (they need ioredis's own classes). */
export const REDIS_PLUMBING = [
  'src/lib/redis',
  'src/lib/queues',
  'actors/runtime',
  'src/roles',
  'src/lib/metrics/round-trips.ts', // counts round trips with a hook on ioredis's command send
  'src/lib/pubsub/hub.ts', // the type of the subscriber connection it is handed
];

/** What the clients (built on the wire format) may take from the server's tree, and who may take it. */
export const CLIENT_IMPORTS: readonly { from: string; to: string }[] = [
  { from: 'clients', to: 'src/domain' },
  { from: 'clients', to: 'src/lib/webhooks' }, // the webhook signature check, one copy for the server and the SDK
  { from: 'clients/typescript/codegen', to: 'src/edge' }, // the generator reads the routes' OpenAPI documents
  { from: 'clients/cli/main.ts', to: 'src/main.ts' }, // `troupe serve` runs the service in the CLI's process
];

export interface EdgeRule {
  name: string;
  /** Why `e` breaks the rule, or null when it keeps it. */
  broken(e: Edge): string | null;
}

export const EDGE_RULES: readonly EdgeRule[] = [
  {
    name: 'every import points to its own layer or a lower one (type-only imports too)',
    broken: (e) => {
      if (packageOf(e.to) !== null) return null;
      const [from, to] = [layerOf(e.from), layerOf(e.to)];
      if (from < 0) return `${e.from} is in no layer`;
      if (to < 0) return `${e.to} is in no layer`;
      return to < from ? `${LAYERS[from].name} may not import ${LAYERS[to].name}` : null;
    },
  },
  {
    name: 'server code (src/, actors/) imports nothing from clients/, bench/ or test/',
    broken: (e) => (inAny(['src', 'actors'], e.from) && inAny(['clients', 'bench', 'test', 'sdks'], e.to) ? `server code may not import ${e.to.split('/')[0]}/` : null),
  },
  {
    name: 'the actor runtime imports no specific actor',
    broken: (e) => (under('actors/runtime')(e.from) && under('actors')(e.to) && !under('actors/runtime')(e.to) ? 'the actor runtime may not import an actor' : null),
  },
  {
    name: 'an actor imports no other actor: they talk through their contracts in src/domain/actors',
    broken: (e) => {
      const [a, b] = [actorOf(e.from), actorOf(e.to)];
      return a && b && a !== b && a !== 'runtime' && b !== 'runtime' ? `actor ${a} may not import actor ${b}; its contract is src/domain/actors/${b}.ts` : null;
    },
  },
  {
    name: 'decision code (actors/*/decide|decision|loop|projection|schedule.ts, src/domain/) imports no I/O nor src/store, except as types',
    broken: (e) => (isDecisionFile(e.from) && !e.typeOnly && isIo(e.to) ? `decision code may not import ${packageOf(e.to) ?? 'src/store'}` : null),
  },
  {
    name: `the domain imports only the domain, node builtins without I/O, ${DOMAIN_PACKAGES.join(', ')} and types from ${DOMAIN_TYPE_PACKAGES.join(', ')}`,
    broken: (e) => {
      if (!under('src/domain')(e.from)) return null;
      const pkg = packageOf(e.to);
      if (pkg === null) return under('src/domain')(e.to) ? null : 'the domain may import only the domain';
      if (IO_PACKAGES.includes(pkg)) return `the domain may not import ${pkg}`;
      if (DOMAIN_TYPE_PACKAGES.includes(pkg)) return e.typeOnly ? null : `the domain may import only types from ${pkg}`;
      return pkg.startsWith('node:') || DOMAIN_PACKAGES.includes(pkg) ? null : `the domain may not import the package ${pkg}`;
    },
  },
  {
    name: 'among the actors only the runtime imports bullmq or ioredis',
    broken: (e) => (under('actors')(e.from) && !under('actors/runtime')(e.from) && ['bullmq', 'ioredis'].includes(packageOf(e.to) ?? '') ? `only the actor runtime may import ${e.to} among the actors` : null),
  },
  {
    name: `in src/ only ${REDIS_PLUMBING.filter((p) => !p.startsWith('actors')).join(', ')} import bullmq or ioredis`,
    broken: (e) => (under('src')(e.from) && !inAny(REDIS_PLUMBING, e.from) && ['bullmq', 'ioredis'].includes(packageOf(e.to) ?? '') ? `only the Redis plumbing may import ${e.to}` : null),
  },
  {
    name: 'clients import from the server only src/domain and src/lib/webhooks (the codegen also src/edge, the CLI also src/main.ts)',
    broken: (e) => {
      if (!under('clients')(e.from) || packageOf(e.to) !== null || under('clients')(e.to)) return null;
      return CLIENT_IMPORTS.some((c) => under(c.from)(e.from) && under(c.to)(e.to)) ? null : `clients may not import ${e.to}`;
    },
  },
];

/** `src/store/x.ts -> src/lib/y.ts (store may not import lib)`: how every failure names its edge. */
export const describeEdge = (e: Edge, why: string) => `${e.from} -> ${e.to} (${why})`;

/** Every edge that breaks a rule, described. */
export function violations(edges: readonly Edge[], rules: readonly EdgeRule[] = EDGE_RULES): string[] {
  return edges.flatMap((e) => rules.flatMap((r) => ((why) => (why ? [describeEdge(e, why)] : []))(r.broken(e))));
}

/**
 * Decision code reaches no I/O through the local modules it imports either: follows value imports from each
 * decision file; a package is where a path ends. Each finding is the path, `a.ts -> b.ts -> mongodb`.
 */
export function decisionPathsToIo(edges: readonly Edge[]): string[] {
  const valueEdges = new Map<string, string[]>();
  for (const e of edges) if (!e.typeOnly) valueEdges.set(e.from, [...(valueEdges.get(e.from) ?? []), e.to]);
  const found: string[] = [];
  for (const start of [...valueEdges.keys()].filter(isDecisionFile)) {
    const seen = new Set([start]);
    const paths = [[start]];
    while (paths.length) {
      const path = paths.shift()!;
      for (const to of valueEdges.get(path[path.length - 1]) ?? []) {
        if (isIo(to)) found.push(`${[...path, to].join(' -> ')} (decision code may not reach ${packageOf(to) ?? 'src/store'})`);
        else if (!seen.has(to) && packageOf(to) === null) {
          seen.add(to);
          paths.push([...path, to]);
        }
      }
    }
  }
  return found;
}

/**
 * Every actor folder (the runtime apart) has its contract in src/domain/actors/<name>.ts, its pure decisions and its
 * actor.ts. The session's decisions are the session state machine (src/domain/session/decide.ts), which batch
 * creation (src/app) shares; every other actor's are its own decide.ts.
 */
export const decisionsOf = (actor: string) => (actor === 'session' ? 'src/domain/session/decide.ts' : `actors/${actor}/decide.ts`);

export function actorShapeGaps(files: readonly string[]): string[] {
  const actors = [...new Set(files.map(actorOf).filter((a): a is string => !!a && a !== 'runtime'))];
  return actors.flatMap((a) =>
    [`src/domain/actors/${a}.ts`, decisionsOf(a), `actors/${a}/actor.ts`].filter((f) => !files.includes(f)).map((f) => `${f} is missing (every actor has a contract, its decisions and actor.ts)`),
  );
}
