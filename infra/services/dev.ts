import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { devDataDir } from '../../src/domain/dev-data-dir.js';
import { installProcessGuards } from '../../src/lib/lifecycle/process-guards.js';
import { startRoles, type Running } from '../../src/roles/start.js';
import { EXIT_AFTER_UNCAUGHT } from '../../src/roles/serve.js';
import { runDemo } from './demo.js';
import { onLauncherGone } from './launcher-parent.js';
import { ensureBubblewrap } from './bubblewrap.js';
import { startLocalServices } from './local-services.js';
import { ensurePython3 } from './python3.js';

const ROOT = resolve(__dirname, '../../..');

/** Dev keys are made once and kept in the data folder, so restarts keep working credentials. */
function devKeys(dataDir: string): { api: string; routing: string } {
  const file = join(dataDir, 'dev-keys.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8'));
  const keys = { api: `tr_sk_dev_${randomBytes(18).toString('base64url')}`, routing: `tr_rk_dev_${randomBytes(18).toString('base64url')}` };
  writeFileSync(file, JSON.stringify(keys, null, 2), { mode: 0o600 });
  return keys;
}

/** Where the CLI picks the dev keys up (clients/cli/config.ts): a data folder of its own only with the same TROUPE_DATA_DIR. */
function devKeysScope(dataDir: string): string {
  return dataDir === join(ROOT, '.data') ? 'in this checkout' : `where TROUPE_DATA_DIR=${dataDir} is set`;
}

/**
 * `npm start`: everything on one machine. Redis and a MongoDB-wire server are
 * started locally unless REDIS_URL / MONGODB_URL point elsewhere; data lives
 * under .data/ and survives restarts. Ctrl-C stops Troupe and both servers.
 */
export async function main(_args: string[]): Promise<void> {
  // `npm start` killed outright (SIGKILL) leaves this process orphaned, still serving: it stops as if told to.
  // Until the signal handlers below are in place, as a signal would, it ends the process (and so the servers).
  let whenLauncherGone: () => void = () => process.exit(1);
  onLauncherGone(() => whenLauncherGone());
  const dataDir = devDataDir(ROOT);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  // Tools and entrypoints run under bwrap; without it (not root, not installed) Troupe falls back to a weak sandbox and logs so.
  try {
    ensureBubblewrap((m) => process.stderr.write(`[services] ${m}\n`));
  } catch (e) {
    process.stderr.write(`[services] ${(e as Error).message}\n`);
  }
  // The example agent has a Python tool.
  ensurePython3((m) => process.stderr.write(`[services] ${m}\n`));
  const services = await startLocalServices({ dataDir, redisUrl: process.env.REDIS_URL, mongodbUrl: process.env.MONGODB_URL });
  const keys = devKeys(dataDir);
  const env = {
    ...process.env,
    REDIS_URL: services.redisUrl,
    MONGODB_URL: services.mongodbUrl,
    TROUPE_BOOTSTRAP_API_KEY: process.env.TROUPE_BOOTSTRAP_API_KEY || keys.api,
    TROUPE_BOOTSTRAP_ROUTING_KEY: process.env.TROUPE_BOOTSTRAP_ROUTING_KEY || keys.routing,
    TROUPE_WEBHOOKS_ALLOW_PRIVATE: process.env.TROUPE_WEBHOOKS_ALLOW_PRIVATE ?? '1',
    // A laptop run with the dev keys printed on screen stays off the network unless asked (HOST=*).
    HOST: process.env.HOST || '127.0.0.1',
    // A local model server (Ollama, vLLM on localhost) is the usual thing to point a dev agent at.
    TROUPE_MODELS_ALLOW_PRIVATE: process.env.TROUPE_MODELS_ALLOW_PRIVATE ?? '1',
    LOG_LEVEL: process.env.LOG_LEVEL || 'warn',
  };
  // Ctrl-C reaches this process and the roles, not the servers (they run in their own process group: startManaged):
  // the roles close first, then the servers they were using, so nothing logs a lost connection on the way out. A
  // signal while the roles start is kept until they have started. Before this point a signal ends the process at
  // once, and the servers' watchdogs end them.
  let stopRequested = false;
  let stopNow: ((code?: number) => void) | null = null;
  const onSignal = () => {
    stopRequested = true;
    stopNow?.();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  whenLauncherGone = onSignal;
  let running: Running;
  try {
    running = await startRoles(['web', 'router', 'worker', 'webhooks'], env);
  } catch (err) {
    await services.stop();
    throw err;
  }
  let stopping: Promise<void> | null = null;
  stopNow = (code = 0) => {
    stopping ??= running
      .close()
      .catch((err: Error) => void process.stderr.write(`troupe: closing the roles failed: ${err.stack ?? err}\n`))
      .finally(() => services.stop().finally(() => process.exit(code)));
  };
  if (stopRequested) return stopNow();
  // The same guards as `troupe <role...>` (src/roles/serve.ts): every role shares this process.
  installProcessGuards({ log: running.core.log, count: (kind) => running.core.metrics.processErrors.inc({ kind }), fatal: () => stopNow?.(EXIT_AFTER_UNCAUGHT) });
  const { config } = running.core;
  // The CLI reads this file as its dev profile when run inside the checkout (clients/cli/config.ts).
  writeFileSync(join(dataDir, 'dev-keys.json'), JSON.stringify({ ...keys, base_url: config.publicUrl }, null, 2), { mode: 0o600 });
  const lines = [
    '',
    'Troupe is running (roles: web, router, worker, webhooks).',
    `  base URL:     ${config.publicUrl}`,
    `  routing URL:  ${config.routingPublicUrl}`,
    `  API key:      ${env.TROUPE_BOOTSTRAP_API_KEY}`,
    `  routing key:  ${env.TROUPE_BOOTSTRAP_ROUTING_KEY}`,
    `  Redis:        ${services.redisUrl}`,
    `  MongoDB-wire: ${services.mongodbUrl} (${services.mongoKind})`,
    `  data:         ${dataDir}`,
    '',
    `  console:      ${config.publicUrl}/console (paste the API key)`,
    `  dev keys:     ${join(dataDir, 'dev-keys.json')} (the CLI's default profile ${devKeysScope(dataDir)})`,
    '',
    'Try: npx troupe deploy examples/weather-agent',
    '     npx troupe deploy examples/triage-agent-js   (a code agent; then its README: send --wait --answer)',
    `     curl ${config.publicUrl}/readyz`,
    'Ctrl-C stops Troupe and the local servers.',
    '',
  ];
  process.stdout.write(lines.join('\n') + '\n');
  if (process.env.TROUPE_DEMO !== '0') {
    const base = `http://127.0.0.1:${running.ports.web}`;
    await runDemo(base, env.TROUPE_BOOTSTRAP_API_KEY, join(ROOT, 'examples', 'weather-agent'), (l) => process.stdout.write(`[demo] ${l}\n`)).catch((err: Error) => {
      // Stopped halfway by Ctrl-C is not a failure to report.
      if (!stopping) process.stdout.write(`[demo] failed: ${err.message}\n`);
    });
  }
}
