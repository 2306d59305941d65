/** A tool this host cannot run safely (or at all): the call fails with this message instead of running weaker. */
export class SandboxUnavailableError extends Error {
  override name = 'SandboxUnavailableError';
}
