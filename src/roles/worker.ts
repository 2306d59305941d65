import type { Core } from './core.js';

/**
 * Session, router-proxy, tool-runner and batch actors. None is registered
 * yet, so the role connects, says so, and waits for SIGTERM.
 */
export async function startWorker(core: Core): Promise<void> {
  core.log.info({ role: 'worker', actors: [] }, 'worker started; no actors are registered in this build, idling');
}
