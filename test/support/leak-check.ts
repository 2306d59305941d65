/**
 * Mocha root hook for the integration config: after every suite has run and
 * cleaned up, no TCP socket or server may remain open in this process. A test
 * that leaves a client, server or stream open fails the run here.
 */
// Pipes are left out: stdout and stderr are pipes when the output is captured.
const LEAKY = new Set(['TCPSocketWrap', 'TCPServerWrap']);

function leaks(): string[] {
  return process.getActiveResourcesInfo().filter((r) => LEAKY.has(r));
}

export const mochaHooks = {
  async afterAll(this: { timeout(ms: number): void }) {
    this.timeout(10_000);
    // Sockets closed in the last test may need a few ticks to be released.
    for (let i = 0; i < 50 && leaks().length > 0; i++) await new Promise((r) => setTimeout(r, 100));
    const left = leaks();
    if (left.length > 0) throw new Error(`leaked handles after the integration suite: ${left.join(', ')}`);
  },
};
