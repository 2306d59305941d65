/**
 * src/main.ts's roles, signals and process guards (serveRoles), plus a way for a
 * test to throw where no request can: on SIGUSR2 this process raises, from a
 * timer so no handler of Troupe's is on the stack, what TROUPE_TEST_CRASH names:
 * `rejection` (a promise rejected with nobody awaiting it) or `exception` (an
 * uncaught throw). Test code only; production has no such hook.
 */
import { serveRoles } from '../../src/roles/serve.js';

class DeliberateFault extends Error {
  override name = 'DeliberateFault';
}

serveRoles(process.argv.slice(2))
  .then(() => {
    const kind = process.env.TROUPE_TEST_CRASH;
    process.on('SIGUSR2', () => {
      setTimeout(() => {
        if (kind === 'rejection') void Promise.reject(new DeliberateFault('deliberate unhandled rejection'));
        else throw new DeliberateFault('deliberate uncaught exception');
      }, 0);
    });
    process.stdout.write('{"msg":"crash hook ready"}\n');
  })
  .catch((err: unknown) => {
    process.stderr.write(`crash-process failed to start: ${String(err)}\n`);
    process.exit(1);
  });
