import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { startLocalServices } from './local-services.js';

/**
 * `npm test`: the unit tests, then the integration tests in legs, each leg
 * against its own throwaway servers, stopping everything it started whatever
 * the outcome.
 *
 * Legs:
 *   single   the whole integration suite on one redis-server (or REDIS_URL / MONGODB_URL when given)
 *   cluster  on a local 3-master Redis Cluster, the suites of the data plane (sessions, SSE, agent
 *            turns, batches, webhooks, tool runner, router stickiness, worker failover) and the
 *            multi-process test, which runs on this leg only (.mocharc.cluster.json)
 * TROUPE_TEST_LEGS=single,cluster picks legs (default: both; cluster is skipped when REDIS_URL is given,
 * since that names the Redis to test; `npm run test:integration` runs the single leg only).
 */
type Leg = { name: string; redis: 'single' | 'cluster'; mocharc: string };
const LEGS: Leg[] = [
  { name: 'single', redis: 'single', mocharc: '.mocharc.integration.json' },
  // The suites whose behaviour rests on Redis (queues, locks, pub/sub, stickiness), not all of them: the whole
  // suite a second time would double the CI time for tests (archives, files, auth) that never touch a queue.
  { name: 'cluster', redis: 'cluster', mocharc: '.mocharc.cluster.json' },
];

function mocha(config: string, env: NodeJS.ProcessEnv): Promise<number> {
  const bin = resolve(__dirname, '../../../node_modules/mocha/bin/mocha.js');
  return new Promise((res) => {
    const child = spawn(process.execPath, [bin, '--config', config, ...process.argv.slice(2).filter((a) => !a.startsWith('--integration-only') && !a.startsWith('--unit-only'))], {
      env,
      stdio: 'inherit',
      cwd: resolve(__dirname, '../../..'),
    });
    child.on('exit', (code, signal) => res(code ?? (signal ? 1 : 0)));
  });
}

function chosenLegs(): Leg[] {
  const wanted = process.env.TROUPE_TEST_LEGS?.split(',').map((s) => s.trim()).filter(Boolean);
  if (wanted) {
    const unknown = wanted.filter((w) => !LEGS.some((l) => l.name === w));
    if (unknown.length) throw new Error(`TROUPE_TEST_LEGS names unknown legs: ${unknown.join(', ')} (known: ${LEGS.map((l) => l.name).join(', ')})`);
    return LEGS.filter((l) => wanted.includes(l.name));
  }
  // A given REDIS_URL is the Redis under test; TROUPE_LOCAL_REDIS=cluster makes the one leg a cluster leg.
  if (process.env.REDIS_URL) return [LEGS[0]];
  if (process.env.TROUPE_LOCAL_REDIS === 'cluster') return [LEGS[1]];
  // `npm run test:integration` is the quick loop: one leg unless asked for more.
  return process.argv.includes('--integration-only') ? [LEGS[0]] : LEGS;
}

async function runLeg(leg: Leg): Promise<number> {
  const started = Date.now();
  const redisUrl = leg.name === 'single' ? process.env.REDIS_URL : undefined;
  const services = await startLocalServices({ redisUrl, redis: leg.redis, mongodbUrl: process.env.MONGODB_URL });
  process.stderr.write(`[services] leg ${leg.name}: redis ${services.redisUrl}, ${services.mongoKind} ${services.mongodbUrl} (${Date.now() - started} ms)\n`);
  const stopOnSignal = () => void services.stop().then(() => process.exit(130));
  process.once('SIGINT', stopOnSignal);
  process.once('SIGTERM', stopOnSignal);
  try {
    return await mocha(leg.mocharc, {
      ...process.env,
      REDIS_URL: services.redisUrl,
      MONGODB_URL: services.mongodbUrl,
      TROUPE_TEST_MONGO_KIND: services.mongoKind,
      TROUPE_TEST_LEG: leg.name,
    });
  } finally {
    process.off('SIGINT', stopOnSignal);
    process.off('SIGTERM', stopOnSignal);
    await services.stop();
    process.stderr.write(`[services] leg ${leg.name} took ${Math.round((Date.now() - started) / 1000)} s\n`);
  }
}

async function run(): Promise<number> {
  const onlyIntegration = process.argv.includes('--integration-only');
  const onlyUnit = process.argv.includes('--unit-only');
  let failures = 0;
  if (!onlyIntegration) failures += await mocha('.mocharc.unit.json', process.env);
  if (onlyUnit) return failures;
  for (const leg of chosenLegs()) failures += await runLeg(leg);
  return failures;
}

run().then(
  (failures) => process.exit(failures > 0 ? 1 : 0),
  (err) => {
    process.stderr.write(`tests could not start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
