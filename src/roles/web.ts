import { createApp } from '../http/app.js';
import type { Core } from './core.js';
import { listen } from './http-server.js';

/** The `{base_url}` API and SSE streams. */
export async function startWeb(core: Core, port = core.config.port): Promise<{ port: number }> {
  const app = createApp(core);
  const { port: actual, closer } = await listen('web', app.callback(), port, Math.min(5000, core.config.shutdownTimeoutMs));
  core.shutdown.add(closer);
  core.log.info({ role: 'web', port: actual, base_url: core.config.publicUrl }, 'web listening');
  return { port: actual };
}
