/**
 * Troupe roles in a child process, like one dyno of the Procfile: roles from
 * argv, configuration from the environment. Prints `ready <web port>` once
 * serving, and stops in order on SIGTERM.
 */
import { createLogger } from '../../src/log/logger.js';
import { parseRoles, startRoles } from '../../src/roles/start.js';

// Never outlive the test run that started us (a SIGKILLed mocha cannot stop its children).
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(1);
}, 1000).unref();

startRoles(parseRoles(process.argv.slice(2)), process.env, createLogger('warn')).then(
  (running) => {
    process.stdout.write(`ready ${running.ports.web ?? 0}\n`);
    process.once('SIGTERM', () => void running.close().then(() => process.exit(0), () => process.exit(1)));
  },
  (err: unknown) => {
    process.stderr.write(`roles failed: ${String(err)}\n`);
    process.exit(1);
  },
);
