#!/usr/bin/env node
import { ConfigError } from './config/config.js';
import { parseRoles, startRoles } from './roles/start.js';

/**
 * Composition root: `troupe <role...>` with roles web, router, worker,
 * webhooks, or all. Configuration comes from the environment only.
 */
async function run(): Promise<void> {
  const roles = parseRoles(process.argv.slice(2));
  const running = await startRoles(roles);
  const log = running.core.log;
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const hard = setTimeout(() => {
      log.error('shutdown timed out; exiting');
      process.exit(1);
    }, running.core.config.shutdownTimeoutMs + 2000);
    hard.unref();
    void running.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

run().catch((err: unknown) => {
  if (err instanceof ConfigError || (err instanceof Error && /^(name a role|unknown role)/.test(err.message))) {
    process.stderr.write(`troupe: ${err.message}\n`);
  } else {
    process.stderr.write(`troupe: failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  }
  process.exit(1);
});
