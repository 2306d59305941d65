import { installProcessGuards } from '../lib/lifecycle/process-guards.js';
import { parseRoles, startRoles, type Running } from './start.js';

/** The exit code of a process that drained after an uncaught exception: nonzero, so its supervisor restarts it. */
export const EXIT_AFTER_UNCAUGHT = 70;

/**
 * What `troupe <role...>` runs: the roles, then the signals that stop them and
 * the guards for throws nothing handled. src/main.ts is this and its error
 * printing; a test entry (test/support/crash-process.ts) runs the same.
 */
export async function serveRoles(argv: string[]): Promise<Running> {
  const running = await startRoles(parseRoles(argv));
  const log = running.core.log;
  let stopping = false;
  const stop = (why: string, code: number) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal: why }, 'shutting down');
    const hard = setTimeout(() => {
      log.error('shutdown timed out; exiting');
      process.exit(code || 1);
    }, running.core.config.shutdownTimeoutMs + 2000);
    hard.unref();
    void running.close().then(() => process.exit(code));
  };
  process.on('SIGTERM', () => stop('SIGTERM', 0));
  process.on('SIGINT', () => stop('SIGINT', 0));
  installProcessGuards({
    log,
    count: (kind) => running.core.metrics.processErrors.inc({ kind }),
    fatal: () => stop('uncaughtException', EXIT_AFTER_UNCAUGHT),
  });
  return running;
}
