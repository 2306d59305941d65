import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * The dependency rules of docs/architecture.md, checked on the import graph
 * of the sources (not the compiled output): every `import`/`export ... from`
 * and dynamic `import()` of every .ts file under src/, actors/ and infra/.
 * A failure names the offending edge.
 */
const ROOT = resolve(__dirname, '../../..');
const LAYERED = ['src', 'actors', 'infra'];

interface Edge {
  from: string;
  /** Repository-relative path of a local module (without extension), or the bare package name. */
  to: string;
  typeOnly: boolean;
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sources(p);
    return p.endsWith('.ts') && !p.endsWith('.d.ts') ? [p] : [];
  });
}

const IMPORT = /(?:^|\n)\s*(import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/g;
const DYNAMIC = /import\(\s*['"]([^'"]+)['"]\s*\)/g;

function edgesOf(file: string): Edge[] {
  const text = readFileSync(file, 'utf8');
  const from = relative(ROOT, file);
  const target = (spec: string) => (spec.startsWith('.') ? relative(ROOT, resolve(dirname(file), spec)).replace(/\.js$/, '') : spec.replace(/^node:/, 'node:'));
  const edges: Edge[] = [];
  for (const m of text.matchAll(IMPORT)) edges.push({ from, to: target(m[3]), typeOnly: !!m[2] });
  for (const m of text.matchAll(DYNAMIC)) edges.push({ from, to: target(m[1]), typeOnly: false });
  return edges;
}

const edges = LAYERED.flatMap((d) => sources(join(ROOT, d))).flatMap(edgesOf);

const under = (prefix: string) => (path: string) => path === prefix || path.startsWith(`${prefix}/`);
const actorOf = (path: string) => /^actors\/([^/]+)\//.exec(path)?.[1] ?? null;
/** Decision code: pure functions over state, unit-tested directly. */
const DECISION_FILES = /^(actors\/[^/]+\/(decide|decision|loop|projection|schedule|status)|src\/domain\/.+)$/;
/** The composition root and the programs that start it (`troupe`, the local launcher, the admin CLI). */
const ENTRYPOINTS = ['src/roles', 'src/main.ts', 'infra/services', 'src/admin'];
const IO_PACKAGES = ['bullmq', 'ioredis', 'mongodb', 'undici', 'koa', 'node:http', 'node:https', 'node:net', 'node:fs', 'node:child_process'];

interface Rule {
  name: string;
  broken(e: Edge): boolean;
}

const RULES: Rule[] = [
  { name: 'layers point down: only entrypoints import the composition root (src/roles)', broken: (e) => !ENTRYPOINTS.some((p) => under(p)(e.from)) && (under('src/roles')(e.to) || e.to === 'src/main') },
  { name: 'actors import neither the HTTP layer nor the application services above them', broken: (e) => under('actors')(e.from) && ['src/http', 'src/batches', 'src/admin'].some((p) => under(p)(e.to)) },
  { name: 'the actor runtime imports no specific actor', broken: (e) => under('actors/runtime')(e.from) && under('actors')(e.to) && !under('actors/runtime')(e.to) },
  {
    name: "an actor uses another actor only through that actor's messages.ts",
    broken: (e) => {
      const [a, b] = [actorOf(e.from), actorOf(e.to)];
      return !!a && !!b && a !== b && b !== 'runtime' && !e.to.endsWith('/messages');
    },
  },
  { name: 'only the actor runtime and infra touch BullMQ and ioredis among the actors', broken: (e) => under('actors')(e.from) && !under('actors/runtime')(e.from) && ['bullmq', 'ioredis'].includes(e.to) },
  { name: 'decision code does no I/O', broken: (e) => DECISION_FILES.test(e.from.replace(/\.ts$/, '')) && !e.typeOnly && (IO_PACKAGES.includes(e.to) || under('src/store')(e.to)) },
  { name: 'the domain imports only the domain', broken: (e) => under('src/domain')(e.from) && !e.typeOnly && (under('src')(e.to) || under('actors')(e.to) || under('infra')(e.to)) && !under('src/domain')(e.to) },
  { name: 'stores import no actor, HTTP or application code', broken: (e) => under('src/store')(e.from) && (under('actors')(e.to) || ['src/http', 'src/batches', 'src/roles'].some((p) => under(p)(e.to))) },
  { name: 'the server (src, actors) imports nothing from the clients, which build on it', broken: (e) => (under('src')(e.from) || under('actors')(e.from)) && under('clients')(e.to) },
  { name: 'infra imports no actor or HTTP code', broken: (e) => under('infra')(e.from) && !under('infra/services')(e.from) && (under('actors')(e.to) || under('src/http')(e.to)) },
];

describe('architecture: the import graph keeps the dependency rules (docs/architecture.md)', () => {
  it('finds the sources and their imports', () => {
    assert.ok(edges.length > 500, `only ${edges.length} import edges found; is the parser broken?`);
    assert.ok(edges.some((e) => e.from === 'actors/session/actor.ts' && e.to === 'actors/runtime/actor'), 'a known edge is found');
    assert.ok(edges.some((e) => e.typeOnly), 'type-only imports are recognised');
  });

  for (const rule of RULES) {
    it(rule.name, () => {
      const bad = edges.filter(rule.broken).map((e) => `${e.from} -> ${e.to}${e.typeOnly ? ' (type)' : ''}`);
      assert.deepEqual(bad, [], `offending imports:\n  ${bad.join('\n  ')}`);
    });
  }

  it('every actor has its contract in src/domain/actors, a pure decide.ts and its actor.ts (docs/architecture.md, One actor shape)', () => {
    const actors = readdirSync(join(ROOT, 'actors')).filter((d) => d !== 'runtime' && statSync(join(ROOT, 'actors', d)).isDirectory());
    assert.ok(actors.length >= 5, `only ${actors.length} actor folders found`);
    // The session's decisions are the session state machine, which batch creation (src/app) shares.
    const decisions = (a: string) => (a === 'session' ? 'src/domain/session/decide' : `actors/${a}/decide`);
    const missing = actors.flatMap((a) => [`src/domain/actors/${a}.ts`, `${decisions(a)}.ts`, `actors/${a}/actor.ts`].filter((f) => !existsSync(join(ROOT, f))));
    assert.deepEqual(missing, []);
    for (const a of actors) assert.ok(DECISION_FILES.test(decisions(a)), `${decisions(a)}.ts is held to rule 6`);
  });

  it("decision code reaches no I/O through the local modules it imports either", () => {
    // Follows value imports from each decision file through local modules; a package import is where a path ends.
    const valueEdges = new Map<string, Edge[]>();
    for (const e of edges) if (!e.typeOnly) valueEdges.set(e.from.replace(/\.ts$/, ''), [...(valueEdges.get(e.from.replace(/\.ts$/, '')) ?? []), e]);
    const bad: string[] = [];
    for (const start of new Set(edges.map((e) => e.from.replace(/\.ts$/, '')).filter((f) => DECISION_FILES.test(f)))) {
      const seen = new Set([start]);
      const paths: string[][] = [[start]];
      while (paths.length) {
        const path = paths.shift()!;
        for (const e of valueEdges.get(path[path.length - 1]) ?? []) {
          if (IO_PACKAGES.includes(e.to) || under('src/store')(e.to)) bad.push([...path, e.to].join(' -> '));
          else if (!seen.has(e.to) && LAYERED.some((d) => under(d)(e.to))) {
            seen.add(e.to);
            paths.push([...path, e.to]);
          }
        }
      }
    }
    assert.deepEqual(bad, [], `decision code reaches I/O:\n  ${bad.join('\n  ')}`);
  });

  it('each rule can fail: a made-up offending edge breaks it', () => {
    const offenders: Edge[] = [
      { from: 'actors/session/turn.ts', to: 'src/roles/core', typeOnly: true },
      { from: 'actors/batch/actor.ts', to: 'src/http/deps', typeOnly: true },
      { from: 'actors/runtime/runtime.ts', to: 'actors/session/turn', typeOnly: false },
      { from: 'actors/webhook/actor.ts', to: 'actors/session/turn', typeOnly: false },
      { from: 'actors/session/turn.ts', to: 'bullmq', typeOnly: false },
      { from: 'actors/session/decide.ts', to: 'mongodb', typeOnly: false },
      { from: 'src/domain/ledger.ts', to: 'src/store/ledger', typeOnly: false },
      { from: 'src/store/ledger.ts', to: 'actors/session/messages', typeOnly: true },
      { from: 'src/admin/cli.ts', to: 'clients/cli/exit-codes', typeOnly: false },
      { from: 'infra/queues/queues.ts', to: 'actors/runtime/actor', typeOnly: false },
    ];
    RULES.forEach((rule, i) => assert.ok(rule.broken(offenders[i]), `rule "${rule.name}" did not catch ${offenders[i].from} -> ${offenders[i].to}`));
  });
});
