import type { Logger } from '../log/logger.js';

export type ProcessErrorKind = 'unhandled_rejection' | 'uncaught_exception';

export interface ProcessGuardDeps {
  log: Logger;
  /** Counts one caught throw (troupe_process_errors_total). */
  count(kind: ProcessErrorKind): void;
  /** Drains and exits non-zero; called once, for the first uncaught exception. */
  fatal(err: unknown): void;
}

/**
 * The process's last line for throws nothing handled (docs/decisions.md, "Process guards").
 *
 * A rejected promise nobody awaited is a bug in a code path that has already
 * settled: the request or turn it belonged to failed or moved on, and no
 * shared state was left half-changed by a stack unwinding through it. It is
 * logged and counted, and the process keeps serving (Node's default would
 * have killed every role of it).
 *
 * An uncaught exception unwound a stack mid-way through something (a timer,
 * an event handler, a socket callback) whose state is now unknown: the
 * process drains and exits non-zero, and its supervisor starts a clean one.
 * Exceptions raised while it drains are logged and counted, not acted on again.
 */
export function installProcessGuards(deps: ProcessGuardDeps, proc: NodeJS.EventEmitter = process): () => void {
  let fatalSeen = false;
  const onRejection = (reason: unknown) => {
    deps.count('unhandled_rejection');
    deps.log.error({ err: reason }, 'unhandled promise rejection; still serving');
  };
  const onException = (err: unknown) => {
    deps.count('uncaught_exception');
    deps.log.fatal({ err }, fatalSeen ? 'uncaught exception while exiting' : 'uncaught exception; draining and exiting');
    if (fatalSeen) return;
    fatalSeen = true;
    deps.fatal(err);
  };
  proc.on('unhandledRejection', onRejection);
  proc.on('uncaughtException', onException);
  return () => {
    proc.off('unhandledRejection', onRejection);
    proc.off('uncaughtException', onException);
  };
}
