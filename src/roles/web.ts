import { Asker } from '../../actors/runtime/asker.js';
import { createApp } from '../edge/api/app.js';
import { STREAM_READS_IN_FLIGHT, StreamLedgerReads } from '../edge/api/sse/ledger-reads.js';
import { once } from '../lib/lifecycle/shutdown.js';
import { appDeps, type Core } from './core.js';
import { listen } from './http-server.js';
import { McpConnector } from '../lib/mcp/connector.js';

/** The `{base_url}` API and SSE streams. */
export async function startWeb(core: Core, port = core.config.port): Promise<{ port: number }> {
  const { hub, dispatcher } = core.plane;
  const asker = new Asker(hub, dispatcher, `${core.config.redisPrefix}:reply:`);
  await asker.start();
  core.shutdown.add(once('asker', () => asker.close()));
  // Probed on this node (same image as the workers) so /healthz shows the enforcement level in force.
  const { sandboxCapabilities } = await import('../lib/sandbox/capabilities.js');
  const sandbox = sandboxCapabilities();
  // One per process, beside its subscriber: a subscriber reconnect has every stream on it read the ledger at once.
  const streamReads = new StreamLedgerReads(core.stores.ledger, STREAM_READS_IN_FLIGHT, {
    started: () => core.metrics.sseLedgerReads.inc(),
    waiting: (n) => core.metrics.sseLedgerReadsWaiting.set(n),
  });
  // Registered before the listener, so it closes after the requests that may be listing tools.
  const mcp = new McpConnector({ allowPrivate: core.config.modelsAllowPrivate, maxResultBytes: core.config.buffers.mcpResultBytes });
  core.shutdown.add(once('mcp-connector', () => mcp.close()));
  const app = createApp({ ...appDeps(core), mcp, sessionsRuntime: { asker, hub, streamReads }, health: () => ({ sandbox }) });
  const { port: actual, closer } = await listen('web', app.callback(), { port, setting: 'PORT', host: core.config.host, graceMs: Math.min(5000, core.config.shutdownTimeoutMs), drain: core.drain, log: core.log });
  core.shutdown.add(closer);
  core.log.info({ role: 'web', host: core.config.host ?? '*', port: actual, base_url: core.config.publicUrl }, 'web listening');
  return { port: actual };
}
