/**
 * Exit codes scripts can rely on, shared by both command-line programs: `troupe` (clients/cli) and `troupe-admin`
 * (src/admin). One per kind of outcome, so `case $?` can tell "fix your input" from "try again later" from "it ran
 * and failed". Here, not in clients/cli, because the server's code imports nothing from the clients.
 */
export const EXIT = {
  ok: 0,
  /** Unexpected failure (a bug): the message says what. */
  internal: 1,
  /** Bad arguments or missing configuration (no base URL or key; for the admin CLI, no MONGODB_URL). */
  usage: 2,
  /** The request was refused: the API answered 4xx, or the admin CLI's org or key is not there (or already is). */
  refused: 3,
  /** The API could not be reached or failed (connection error, 5xx). */
  unavailable: 4,
  /** The work ran and failed: a message failed or was cancelled, a batch had failures, a deploy did not verify. */
  failed: 5,
  /** A wait (--wait, batch progress) ran out of time; the work goes on server-side. */
  timeout: 6,
} as const;
