#!/usr/bin/env node
import { ConfigError } from './lib/config/config.js';
import { serveRoles } from './roles/serve.js';

/**
 * Composition root: `troupe <role...>` with roles web, router, worker,
 * webhooks, or all. Configuration comes from the environment only.
 */
serveRoles(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof ConfigError || (err instanceof Error && /^(name a role|unknown role)/.test(err.message))) {
    process.stderr.write(`troupe: ${err.message}\n`);
  } else {
    process.stderr.write(`troupe: failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  }
  process.exit(1);
});
