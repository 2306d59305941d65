import assert from 'node:assert/strict';
import { posix, resolve } from 'node:path';
import { edgesOf, fileIn, parseImports, resolveImport, sourcesUnder, type Edge, type ImportForm, type ImportRef } from './architecture-graph.js';
import { actorShapeGaps, decisionPathsToIo, EDGE_RULES, LAYERS, SCANNED, violations } from './architecture-rules.js';

/**
 * The dependency rules of docs/architecture.md (the rules themselves: ./architecture-rules.ts), checked on the
 * import graph of every .ts file under src/, actors/, infra/, clients/, bench/ and test/, read by the TypeScript
 * parser (./architecture-graph.ts). A failure names the edge: `src/store/x.ts -> src/lib/y.ts (store may not import lib)`.
 */
const ROOT = resolve(__dirname, '../../..');

/** Made-up sources, parsed with the real ones: one per import form, each a store file importing lib (upward). */
const MADE_UP_ROOT = '/architecture-made-up';
const MADE_UP_FILES = new Set(['src/lib/y.ts', 'src/lib/z/index.ts']);
const FORMS: readonly { form: ImportForm; text: string; typeOnly: boolean }[] = [
  { form: 'import', text: "import { y } from '../lib/y.js';\nexport const x = y;", typeOnly: false },
  { form: 'import', text: "import type { Y } from '../lib/y.js';\nexport type X = Y;", typeOnly: true },
  { form: 'import', text: "import { type Y, type W } from '../lib/y.js';\nexport type X = Y | W;", typeOnly: true },
  { form: 'export from', text: "export { y } from '../lib/y.js';", typeOnly: false },
  { form: 'export from', text: "export type { Y } from '../lib/y.js';", typeOnly: true },
  { form: 'export from', text: "export * from '../lib/y.js';", typeOnly: false },
  { form: 'export from', text: "export * as y from '../lib/y.js';", typeOnly: false },
  { form: 'side effect', text: "import '../lib/y.js';", typeOnly: false },
  { form: 'require', text: "export const y = require('../lib/y.js');", typeOnly: false },
  { form: 'import = require', text: "import y = require('../lib/y.js');\nexport const x = y;", typeOnly: false },
  { form: 'import()', text: "export async function f() {\n  return (await import('../lib/y.js')).y;\n}", typeOnly: false },
  { form: 'import type()', text: "export type X = import('../lib/y.js').Y;", typeOnly: true },
  { form: 'import type()', text: "export function f(y: typeof import('../lib/y.js')): void {\n  void y;\n}", typeOnly: true },
  { form: 'import', text: "import { z } from '../lib/z';\nexport const x = z;", typeOnly: false },
];
/** Imports that are only words in comments, strings, templates and a regular expression: no edge. */
const NOT_IMPORTS = [
  "// import { y } from '../lib/y.js';",
  "/* require('../lib/y.js') */",
  "/** {@link import('../lib/y.js').Y} see import('../lib/y.js') */",
  "export const a = \"import '../lib/y.js'\";",
  "export const b = `export * from '../lib/y.js' ${'require(\"../lib/y.js\")'}`;",
  "export const c = /import\\('..\\/lib\\/y.js'\\)/;",
  "export const d = require.resolve('../lib/y.js');",
].join('\n');
const madeUpPath = (name: string) => `src/store/${name}.ts`;
const madeUpTexts = new Map([...FORMS.map((f, i) => [`${MADE_UP_ROOT}/${madeUpPath(`form-${i}`)}`, f.text] as const), [`${MADE_UP_ROOT}/${madeUpPath('words')}`, NOT_IMPORTS]]);

let files: string[] = [];
let edges: Edge[] = [];
let madeUp = new Map<string, ImportRef[]>();

/**
 * For each edge rule, an edge that breaks it (with the message it must give) and a close one that keeps it, so the
 * rule is shown to be able to fail and not to fail on everything.
 */
const RULE_CASES: Record<string, { bad: Edge; message: string; ok: Edge }> = {
  'every import points to its own layer or a lower one (type-only imports too)': {
    bad: { from: 'src/store/x.ts', to: 'src/lib/y.ts', typeOnly: true },
    message: 'src/store/x.ts -> src/lib/y.ts (store may not import lib)',
    ok: { from: 'src/lib/y.ts', to: 'src/store/x.ts', typeOnly: false },
  },
  'server code (src/, actors/) imports nothing from clients/, bench/ or test/': {
    bad: { from: 'src/roles/web.ts', to: 'test/support/harness.ts', typeOnly: true },
    message: 'src/roles/web.ts -> test/support/harness.ts (server code may not import test/)',
    ok: { from: 'test/support/harness.ts', to: 'src/roles/web.ts', typeOnly: false },
  },
  'the actor runtime imports no specific actor': {
    bad: { from: 'actors/runtime/runtime.ts', to: 'actors/session/actor.ts', typeOnly: true },
    message: 'actors/runtime/runtime.ts -> actors/session/actor.ts (the actor runtime may not import an actor)',
    ok: { from: 'actors/runtime/runtime.ts', to: 'actors/runtime/actor.ts', typeOnly: false },
  },
  'an actor imports no other actor: they talk through their contracts in src/domain/actors': {
    bad: { from: 'actors/webhook/actor.ts', to: 'actors/session/turn.ts', typeOnly: true },
    message: 'actors/webhook/actor.ts -> actors/session/turn.ts (actor webhook may not import actor session; its contract is src/domain/actors/session.ts)',
    ok: { from: 'actors/webhook/actor.ts', to: 'src/domain/actors/session.ts', typeOnly: false },
  },
  'decision code (actors/*/decide|decision|loop|projection|schedule.ts, src/domain/) imports no I/O nor src/store, except as types': {
    bad: { from: 'actors/session/decide.ts', to: 'src/store/sessions.ts', typeOnly: false },
    message: 'actors/session/decide.ts -> src/store/sessions.ts (decision code may not import src/store)',
    ok: { from: 'actors/session/decide.ts', to: 'src/store/sessions.ts', typeOnly: true },
  },
  'the domain imports only the domain, node builtins without I/O, ulid and types from json-schema-to-ts': {
    bad: { from: 'src/domain/ids.ts', to: 'node:fs', typeOnly: true },
    message: 'src/domain/ids.ts -> node:fs (the domain may not import node:fs)',
    ok: { from: 'src/domain/ids.ts', to: 'node:crypto', typeOnly: false },
  },
  'among the actors only the runtime imports bullmq or ioredis': {
    bad: { from: 'actors/session/turn.ts', to: 'bullmq', typeOnly: true },
    message: 'actors/session/turn.ts -> bullmq (only the actor runtime may import bullmq among the actors)',
    ok: { from: 'actors/runtime/runtime.ts', to: 'bullmq', typeOnly: false },
  },
  'in src/ only src/lib/redis, src/lib/queues, src/roles, src/lib/metrics/round-trips.ts, src/lib/pubsub/hub.ts import bullmq or ioredis': {
    bad: { from: 'src/lib/limits/limits.ts', to: 'ioredis', typeOnly: true },
    message: 'src/lib/limits/limits.ts -> ioredis (only the Redis plumbing may import ioredis)',
    ok: { from: 'src/lib/redis/connection.ts', to: 'ioredis', typeOnly: false },
  },
  'clients import from the server only src/domain and src/lib/webhooks (the codegen also src/edge, the CLI also src/main.ts)': {
    bad: { from: 'clients/cli/main.ts', to: 'src/edge/api/openapi.ts', typeOnly: true },
    message: 'clients/cli/main.ts -> src/edge/api/openapi.ts (clients may not import src/edge/api/openapi.ts)',
    ok: { from: 'clients/typescript/codegen/generate.ts', to: 'src/edge/api/openapi.ts', typeOnly: false },
  },
};

const describeEdges = (list: readonly string[]) => `\n  ${list.join('\n  ')}`;

describe('architecture: the import graph keeps the layers and rules of docs/architecture.md', () => {
  before(async function () {
    this.timeout(20_000); // one tsgo process parses every file; about a second, more on a loaded machine
    files = sourcesUnder(ROOT, SCANNED);
    const refs = await parseImports([...files.map((f) => posix.join(ROOT, f)), ...madeUpTexts.keys()], madeUpTexts);
    const exists = fileIn(ROOT);
    edges = files.flatMap((f) => edgesOf(f, refs.get(posix.join(ROOT, f))!, exists));
    madeUp = new Map([...madeUpTexts.keys()].map((abs) => [abs.slice(MADE_UP_ROOT.length + 1), refs.get(abs)!]));
  });

  it('reads every file and import: each relative import names a file, and known edges of several forms are found', () => {
    assert.ok(files.length > 500 && edges.length > 2500, `only ${files.length} files and ${edges.length} edges`);
    for (const dir of SCANNED) assert.ok(files.some((f) => f.startsWith(`${dir}/`)), `no file read under ${dir}/`);
    const unresolved = edges.filter((e) => e.unresolved).map((e) => `${e.from} -> ${e.to}`);
    assert.deepEqual(unresolved, [], `relative imports that name no file:${describeEdges(unresolved)}`);
    const has = (from: string, to: string, typeOnly: boolean) => assert.ok(edges.some((e) => e.from === from && e.to === to && e.typeOnly === typeOnly), `edge ${from} -> ${to} not found`);
    has('actors/session/actor.ts', 'actors/runtime/actor.ts', false);
    has('clients/cli/main.ts', 'src/main.ts', false); // require('../../src/main.js')
    has('clients/typescript/codegen/generate.ts', 'src/edge/api/deps.ts', true);
  });

  for (const rule of EDGE_RULES) {
    it(rule.name, () => {
      const bad = violations(edges, [rule]);
      assert.deepEqual(bad, [], `offending imports:${describeEdges(bad)}`);
    });
  }

  it('decision code reaches no I/O through the local modules it imports either', () => {
    const paths = decisionPathsToIo(edges);
    assert.deepEqual(paths, [], `decision code reaches I/O:${describeEdges(paths)}`);
  });

  it('every actor has its contract in src/domain/actors, its decisions and its actor.ts (docs/architecture.md, One actor shape)', () => {
    assert.ok(files.filter((f) => /^actors\/[^/]+\/actor\.ts$/.test(f)).length >= 5, 'fewer than five actors found');
    assert.deepEqual(actorShapeGaps(files), []);
  });

  it('every scanned file is in a layer', () => {
    const unranked = files.filter((f) => !LAYERS.some((l) => l.folders.some((d) => f === d || f.startsWith(`${d}/`))));
    assert.deepEqual(unranked, [], `files in no layer:${describeEdges(unranked)}`);
  });

  describe('self-test: each rule fails on a made-up offence, naming it', () => {
    it('every edge rule has a made-up case', () => {
      assert.deepEqual(EDGE_RULES.map((r) => r.name).filter((n) => !RULE_CASES[n]), []);
      assert.deepEqual(Object.keys(RULE_CASES).filter((n) => !EDGE_RULES.some((r) => r.name === n)), []);
    });

    for (const rule of EDGE_RULES) {
      it(`fails: ${rule.name}`, () => {
        const c = RULE_CASES[rule.name];
        assert.deepEqual(violations([c.bad], [rule]), [c.message]);
        assert.deepEqual(violations([c.ok], [rule]), [], 'the close legal edge passes');
      });
    }

    it('fails a value import from a package the domain may import only types from', () => {
      const rule = EDGE_RULES.find((r) => r.name.startsWith('the domain imports only'))!;
      const edge = { from: 'src/domain/event-data.ts', to: 'json-schema-to-ts' };
      assert.deepEqual(violations([{ ...edge, typeOnly: false }], [rule]), ['src/domain/event-data.ts -> json-schema-to-ts (the domain may import only types from json-schema-to-ts)']);
      assert.deepEqual(violations([{ ...edge, typeOnly: true }], [rule]), []);
    });

    it('fails on an upward import written in each form, read by the parser from a made-up source', () => {
      const exists = (p: string) => MADE_UP_FILES.has(p);
      FORMS.forEach((f, i) => {
        const from = madeUpPath(`form-${i}`);
        const refs = madeUp.get(from)!;
        assert.deepEqual(refs.map((r) => [r.form, r.typeOnly]), [[f.form, f.typeOnly]], `${f.text} is read as one ${f.form}`);
        const to = f.text.includes("'../lib/z'") ? 'src/lib/z/index.ts' : 'src/lib/y.ts';
        assert.deepEqual(violations(edgesOf(from, refs, exists), [EDGE_RULES[0]]), [`${from} -> ${to} (store may not import lib)`], f.text);
      });
    });

    it('reads no import from comments, strings, templates or regular expressions', () => {
      assert.deepEqual(madeUp.get(madeUpPath('words')), []);
    });

    it('resolves .js to .ts, a folder to its index.ts, node builtins to node:, and reports a file that is not there', () => {
      const exists = (p: string) => MADE_UP_FILES.has(p);
      assert.deepEqual(resolveImport('src/store/x.ts', '../lib/y.js', exists), { to: 'src/lib/y.ts' });
      assert.deepEqual(resolveImport('src/store/x.ts', '../lib/z', exists), { to: 'src/lib/z/index.ts' });
      assert.deepEqual(resolveImport('src/store/x.ts', 'fs/promises', exists), { to: 'node:fs/promises' });
      assert.deepEqual(resolveImport('src/store/x.ts', 'bullmq', exists), { to: 'bullmq' });
      assert.deepEqual(resolveImport('src/store/x.ts', './gone.js', exists), { to: 'src/store/gone.js', unresolved: true });
    });

    it('fails when decision code reaches I/O through a local module, naming the path', () => {
      const made: Edge[] = [
        { from: 'actors/session/decide.ts', to: 'src/lib/x.ts', typeOnly: false },
        { from: 'src/lib/x.ts', to: 'node:fs/promises', typeOnly: false },
        { from: 'actors/webhook/decide.ts', to: 'src/lib/x.ts', typeOnly: true },
      ];
      assert.deepEqual(decisionPathsToIo(made), ['actors/session/decide.ts -> src/lib/x.ts -> node:fs/promises (decision code may not reach node:fs)']);
    });

    it('fails when an actor folder lacks one of its three files', () => {
      assert.deepEqual(actorShapeGaps(['actors/runtime/runtime.ts', 'src/domain/actors/pager.ts', 'actors/pager/actor.ts']), ['actors/pager/decide.ts is missing (every actor has a contract, its decisions and actor.ts)']);
      assert.deepEqual(actorShapeGaps(['actors/pager/decide.ts', 'actors/pager/actor.ts']), ['src/domain/actors/pager.ts is missing (every actor has a contract, its decisions and actor.ts)']);
    });
  });
});
