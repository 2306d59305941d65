import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { ensureChromium } from './chromium.js';
import { startLocalServices } from './local-services.js';

/**
 * `npm test`: starts Redis and the MongoDB-wire server (unless REDIS_URL and
 * MONGODB_URL are given), runs the unit then the integration mocha configs
 * against them, and stops everything it started, whatever the outcome.
 */
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

async function run(): Promise<number> {
  const onlyIntegration = process.argv.includes('--integration-only');
  const onlyUnit = process.argv.includes('--unit-only');
  let failures = 0;
  if (!onlyIntegration) failures += await mocha('.mocharc.unit.json', process.env);
  if (onlyUnit) return failures;
  // The console's browser test needs a browser; install it up front like the servers.
  const chromium = ensureChromium((m) => process.stderr.write(`[services] ${m}\n`));
  const started = Date.now();
  const services = await startLocalServices({ redisUrl: process.env.REDIS_URL, mongodbUrl: process.env.MONGODB_URL });
  process.stderr.write(`[services] redis ${services.redisUrl}, ${services.mongoKind} ${services.mongodbUrl} (${Date.now() - started} ms)\n`);
  const stopOnSignal = () => void services.stop().then(() => process.exit(130));
  process.once('SIGINT', stopOnSignal);
  process.once('SIGTERM', stopOnSignal);
  try {
    failures += await mocha('.mocharc.integration.json', {
      ...process.env,
      REDIS_URL: services.redisUrl,
      MONGODB_URL: services.mongodbUrl,
      TROUPE_TEST_MONGO_KIND: services.mongoKind,
      TROUPE_CHROMIUM: chromium,
    });
  } finally {
    await services.stop();
  }
  return failures;
}

run().then(
  (failures) => process.exit(failures > 0 ? 1 : 0),
  (err) => {
    process.stderr.write(`tests could not start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
