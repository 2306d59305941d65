/**
 * A worker role in a child process, for fault tests that kill it with
 * SIGKILL. Configuration comes from the environment, like a real dyno.
 */
import { createLogger } from '../../src/log/logger.js';
import { startRoles } from '../../src/roles/start.js';

startRoles(['worker'], process.env, createLogger('warn')).then(
  () => process.stdout.write('worker-ready\n'),
  (err: unknown) => {
    process.stderr.write(`worker failed: ${String(err)}\n`);
    process.exit(1);
  },
);
