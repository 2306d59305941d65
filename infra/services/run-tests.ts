import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readFailures, type RecordedFailure } from '../../test/support/failures.js';
import { ensureBubblewrap } from './bubblewrap.js';
import { ensureRunsc } from './runsc.js';
import { ensureChromium } from './chromium.js';
import { ensurePython3 } from './python3.js';
import { ensureSchemathesis } from './schemathesis.js';
import { startLocalServices } from './local-services.js';
import { localMongoKind, MONGO_KINDS, type MongoKind } from './mongo-wire.js';

/**
 * `npm test`: runs the unit mocha config, then the integration config once per
 * leg of the MongoDB-wire compatibility matrix: the local default server and a
 * second, independent implementation (FerretDB), each with its own throwaway
 * Redis and MongoDB-wire server. Leniency in one server then fails in the other.
 * MONGODB_URL runs one leg against that server instead; TROUPE_TEST_MONGO
 * (comma-separated kinds) picks the legs.
 *
 * One more leg runs on a local 3-master Redis Cluster (with the default
 * MongoDB-wire server): the suites whose behaviour rests on Redis (queues,
 * locks, sharded pub/sub, stickiness: .mocharc.cluster.json) and the
 * multi-process test, which runs on this leg only. Not the whole suite again:
 * archives, files and auth never touch a queue, and CI time is bounded.
 * TROUPE_TEST_CLUSTER=0 skips it, =only runs only it, =1 adds it to a narrowed run (given
 * REDIS_URL, MONGODB_URL or TROUPE_TEST_MONGO run just the legs they name).
 * Everything started is stopped, whatever the outcome.
 */
/** One mocha run: its exit code (the number of failed tests) and which tests failed (test/support/failures.ts). */
async function mocha(config: string, env: NodeJS.ProcessEnv, extra: string[] = []): Promise<{ code: number; failed: RecordedFailure[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-failures-'));
  const file = join(dir, 'failures.jsonl');
  try {
    const code = await mochaProcess(config, { ...env, TROUPE_TEST_FAILURES_FILE: file }, extra);
    return { code, failed: readFailures(file) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function mochaProcess(config: string, env: NodeJS.ProcessEnv, extra: string[]): Promise<number> {
  const bin = resolve(__dirname, '../../../node_modules/mocha/bin/mocha.js');
  return new Promise((res) => {
    // test/support/skips.ts: a test that skipped itself fails the run unless it is a listed, per-leg one.
    // test/support/timings.ts: each file's wall time at the end, with TROUPE_TEST_TIMINGS=1 (CI sets it).
    const child = spawn(process.execPath, [bin, '--config', config, '--require', 'dist/test/support/skips.js', '--require', 'dist/test/support/timings.js', '--require', 'dist/test/support/failures.js', ...extra, ...process.argv.slice(2).filter((a) => !MODES.includes(a))], {
      env,
      stdio: 'inherit',
      cwd: resolve(__dirname, '../../..'),
    });
    child.on('exit', (code, signal) => res(code ?? (signal ? 1 : 0)));
  });
}

const MODES = ['--unit-only', '--integration-only', '--faults-only'];

interface Leg {
  name: string;
  kind?: MongoKind;
  /** Start a local Redis Cluster instead of one redis-server, and run this mocha config. */
  cluster?: { mocharc: string };
}

interface LegResult {
  name: string;
  /** mocha's exit code: the number of failed tests (or 1 when it could not run). */
  failures: number;
  seconds: number;
  error?: string;
  /** The failed tests by full title, printed under the summary so the log's tail names them. */
  failed: RecordedFailure[];
}

/** The matrix's legs: the default local server, then the other implementation. */
export function matrixLegs(env: NodeJS.ProcessEnv = process.env): Leg[] {
  if (env.MONGODB_URL) return [{ name: 'MONGODB_URL' }];
  const listed = env.TROUPE_TEST_MONGO?.split(',').map((s) => s.trim()).filter(Boolean);
  if (listed?.length) {
    for (const k of listed) if (!(MONGO_KINDS as readonly string[]).includes(k)) throw new Error(`TROUPE_TEST_MONGO: unknown server ${JSON.stringify(k)}; use ${MONGO_KINDS.join(', ')}`);
    return [...new Set(listed)].map((k) => ({ name: k, kind: k as MongoKind }));
  }
  const first = localMongoKind(env);
  const second: MongoKind = first === 'ferretdb' ? 'mongo-java-server' : 'ferretdb';
  return [first, second].map((k) => ({ name: k, kind: k }));
}

/** The matrix's legs plus the Redis Cluster leg (see the comment at the top). */
export function allLegs(env: NodeJS.ProcessEnv = process.env): Leg[] {
  const matrix = matrixLegs(env);
  const cluster: Leg = { name: 'redis-cluster', kind: matrix[0].kind, cluster: { mocharc: '.mocharc.cluster.json' } };
  if (env.TROUPE_TEST_CLUSTER === 'only') return [cluster];
  if (env.TROUPE_TEST_CLUSTER === '1') return [...matrix, cluster];
  // A run narrowed to given servers or legs runs just those.
  if (env.REDIS_URL || env.MONGODB_URL || env.TROUPE_TEST_MONGO || env.TROUPE_TEST_CLUSTER === '0') return matrix;
  return [...matrix, cluster];
}

function printFailed(leg: string, failed: RecordedFailure[]): void {
  for (const f of failed) process.stderr.write(`  failed on ${leg}: ${f.title}\n      ${f.error}\n`);
}

function banner(text: string): void {
  process.stderr.write(`\n${'='.repeat(78)}\n== ${text}\n${'='.repeat(78)}\n`);
}

/**
 * Suites whose subject does not touch the MongoDB-wire server (the OS sandbox, egress, tenant code, the HTTP
 * parsers, process start and drain, slow readers, Redis-only limits and breakers), so a second server adds nothing
 * but minutes: they run on the first leg only. Every other leg exists to
 * catch one server's leniency, which these cannot show. Named here once, so a leg's coverage is read in one place.
 */
export const FIRST_LEG_ONLY = [
  'sandbox',
  'sandbox-runsc',
  'hostile-tenant',
  'hostile-tenant-api',
  'hostile-egress',
  'egress-proxy',
  'python-tools',
  'python-hostile',
  'python-hostile-limits',
  'process-guards',
  'upstream-caps',
  'redis-tls',
  'production-recipe',
  'addon-variables',
  'sse-slow-client',
  'drain',
  'hostile-input',
  'metrics',
  'startup-errors',
  'webhook-fairness',
  'dev-start',
  'router-backpressure',
  'router-breaker',
  // Token windows are counted in Redis on the routing interface's path; the only stored part is a number on the key or org.
  'router-token-limits',
  // The routing interface's proxying: attempt timeouts, the breaker and selection reasons, in answers and metrics.
  'router-health',
  // BullMQ's scripts on Redis, no MongoDB at all (the Redis Cluster leg runs it again on another topology).
  'queue-marker',
  // The hub's Redis subscriber behind a proxy, no MongoDB at all (the Redis Cluster leg runs its cluster suite).
  'pubsub-hub',
  // Orgs' turns on the tool-runner queue in Redis; the handler stands in for the sandbox and stores nothing.
  'tool-fair-share',
  // Routing before the key: 405s with Allow and the 401 challenge, from the document alone.
  'http-methods',
  // The ingresses' key checks and failed-auth limits in Redis (failing open without it); a key lookup is one find.
  'auth-hardening',
  // The routing interface's proxying: vendor formats in and out, SDKs' own helpers, candidate params, fallback
  // counts and logs; their answers are checked, and none reads usage or anything else stored (router-cache does).
  'router',
  'router-input',
  'router-sdk-walk',
  'router-candidate-params',
  'router-fallback-log',
  'router-fit',
  // The worker membership's set and beats in Redis, no MongoDB at all.
  'membership',
  // Extracted versions on the local disk under a cap; no harness, no database.
  'version-eviction',
].map((name) => `dist/test/integration/${name}.test.js`);

/** The fuzzers exercise the HTTP layer, the same on every leg: first leg only, unless TROUPE_FUZZ_SCALE=full asks for every leg. */
export function firstLegOnly(env: NodeJS.ProcessEnv = process.env): string[] {
  const fuzz = ['fuzz', 'raw-http-fuzz'].map((name) => `dist/test/integration/${name}.test.js`);
  return env.TROUPE_FUZZ_SCALE === 'full' ? FIRST_LEG_ONLY : [...FIRST_LEG_ONLY, ...fuzz];
}

/**
 * The suites a leg leaves out: the first-leg-only ones on every later MongoDB-wire leg. Not on the Redis Cluster
 * leg: its config names its files one by one because their subject rests on Redis (webhook fairness, the hub,
 * the queue marker), and mocha's --ignore would drop a named file too.
 */
export function ignoredOnLeg(leg: Pick<Leg, 'cluster'>, index: number, env: NodeJS.ProcessEnv = process.env): string[] {
  return index > 0 && !leg.cluster ? firstLegOnly(env) : [];
}

/** Which suites a leg runs: the fault suite (test/faults/) runs on the first leg only, to keep CI bounded. */
interface Suites {
  integration: boolean;
  faults: boolean;
}

async function runLeg(leg: Leg, index: number, total: number, chromium: string, suites: Suites): Promise<LegResult> {
  const started = Date.now();
  banner(`integration leg ${index + 1}/${total}: ${leg.name}`);
  let services;
  try {
    services = await startLocalServices({ redisUrl: process.env.REDIS_URL, redis: leg.cluster ? 'cluster' : 'single', mongodbUrl: process.env.MONGODB_URL, mongoKind: leg.kind });
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    process.stderr.write(`[services] could not start for leg ${leg.name}: ${error}\n`);
    return { name: leg.name, failures: 1, seconds: (Date.now() - started) / 1000, error: 'services did not start', failed: [] };
  }
  process.stderr.write(`[services] redis ${services.redisUrl}, ${services.mongoKind} ${services.mongodbUrl} (${Date.now() - started} ms)\n`);
  const stopOnSignal = () => void services.stop().then(() => process.exit(130));
  process.once('SIGINT', stopOnSignal);
  process.once('SIGTERM', stopOnSignal);
  try {
    const env = { ...process.env, REDIS_URL: services.redisUrl, MONGODB_URL: services.mongodbUrl, TROUPE_TEST_MONGO_KIND: services.mongoKind, TROUPE_CHROMIUM: chromium, TROUPE_TEST_LEG: String(index + 1) };
    const ignore = ignoredOnLeg(leg, index).flatMap((f) => ['--ignore', f]);
    const runs = [];
    if (suites.integration) runs.push(await mocha(leg.cluster?.mocharc ?? '.mocharc.integration.json', env, ignore));
    // `npm test` runs the fault suite at CI size; `npm run test:faults` at full size (TROUPE_FAULT_SCALE=full).
    if (suites.faults) runs.push(await mocha('.mocharc.faults.json', env));
    return { name: leg.name, failures: runs.reduce((n, r) => n + r.code, 0), seconds: (Date.now() - started) / 1000, failed: runs.flatMap((r) => r.failed) };
  } finally {
    process.off('SIGINT', stopOnSignal);
    process.off('SIGTERM', stopOnSignal);
    await services.stop();
  }
}

async function run(): Promise<number> {
  const onlyIntegration = process.argv.includes('--integration-only');
  const onlyUnit = process.argv.includes('--unit-only');
  const onlyFaults = process.argv.includes('--faults-only');
  let failures = 0;
  let unitFailed: RecordedFailure[] = [];
  // Python custom tools, in unit and integration tests alike.
  ensurePython3((m) => process.stderr.write(`[services] ${m}\n`));
  if (!onlyIntegration && !onlyFaults) {
    banner('unit tests');
    const unit = await mocha('.mocharc.unit.json', process.env);
    failures += unit.code;
    unitFailed = unit.failed;
  }
  if (onlyUnit) {
    printFailed('unit', unitFailed);
    return failures;
  }
  // Tool calls run under bwrap; the sandbox and hostile-tenant tests fail without it.
  ensureBubblewrap((m) => process.stderr.write(`[services] ${m}\n`));
  ensureRunsc((m) => process.stderr.write(`[services] ${m}\n`));
  // The fuzz suite's checker, installed up front like the servers; the suite fails (never skips) without it.
  if (!onlyFaults) {
    try {
      ensureSchemathesis((m) => process.stderr.write(`[services] ${m}\n`));
    } catch (err) {
      process.stderr.write(`[services] ${(err as Error).message}; the fuzzing suite will fail\n`);
    }
  }
  const legs = onlyFaults ? matrixLegs().slice(0, 1) : allLegs();
  // The console's browser test needs a browser; install it up front like the servers.
  const chromium = ensureChromium((m) => process.stderr.write(`[services] ${m}\n`));
  const results: LegResult[] = [];
  for (const [i, leg] of legs.entries()) results.push(await runLeg(leg, i, legs.length, chromium, { integration: !onlyFaults, faults: !onlyIntegration && i === 0 && !leg.cluster }));
  banner('integration matrix summary');
  for (const r of results) {
    const verdict = r.error ?? (r.failures === 0 ? 'passed' : `FAILED (${r.failures} failing)`);
    process.stderr.write(`  ${r.name.padEnd(20)} ${verdict.padEnd(28)} ${r.seconds.toFixed(0)} s\n`);
  }
  printFailed('unit', unitFailed);
  for (const r of results) printFailed(r.name, r.failed);
  return failures + results.reduce((n, r) => n + r.failures, 0);
}

if (require.main === module) {
  run().then(
    (failures) => process.exit(failures > 0 ? 1 : 0),
    (err) => {
      process.stderr.write(`tests could not start: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
