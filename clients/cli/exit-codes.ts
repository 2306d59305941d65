import { TroupeApiError, TroupeConnectionError } from '../typescript/src/errors.js';
import { DeployError } from '../typescript/src/deploy.js';
import { EXIT } from '../../src/domain/exit-codes.js';

/** The exit codes (also in `troupe --help` and README.md), shared with troupe-admin. */
export { EXIT };

export const EXIT_HELP = `Exit codes:
  0  success
  1  unexpected failure (a bug)
  2  bad arguments or missing configuration
  3  the API refused the request (4xx); the API's message is printed
  4  the API could not be reached, or answered 5xx
  5  the work ran and failed (message failed/cancelled, batch with failures, upload not verified)
  6  a wait ran out of time (the work goes on)`;

/** A failure the CLI explains itself, with its exit code. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

export function exitCodeOf(err: unknown): number {
  if (err instanceof CliError) return err.code;
  if (err instanceof DeployError) return EXIT.failed;
  if (err instanceof TroupeApiError) return err.status >= 500 ? EXIT.unavailable : EXIT.refused;
  if (err instanceof TroupeConnectionError) return EXIT.unavailable;
  return EXIT.internal;
}

/** One line a person can act on. */
export function describeError(err: unknown): string {
  if (err instanceof TroupeApiError) return `${err.error.message} (${err.status} ${err.code}${err.param ? `, param ${err.param}` : ''})`;
  if (err instanceof Error) return err.message;
  return String(err);
}
