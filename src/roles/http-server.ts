import { createServer, type RequestListener, type Server } from 'node:http';
import { ConfigError } from '../config/config.js';
import type { Drain } from '../lifecycle/drain.js';
import { once, type Closeable } from '../lifecycle/shutdown.js';

export interface ListenOptions {
  port: number;
  /** null: every interface. */
  host: string | null;
  /** How long in-flight requests may run once the listener stops accepting; then the rest are cut. */
  graceMs: number;
  /** Once draining begins, every answer closes its connection, moving keep-alive clients elsewhere. */
  drain: Drain;
}

/** The setting that moves each listener, so a taken port is reported as the setting to change. */
const PORT_SETTING: Record<string, string> = { web: 'PORT', router: 'ROUTER_PORT', metrics: 'METRICS_PORT' };

function portInUse(name: string, host: string | null, port: number): ConfigError {
  const setting = PORT_SETTING[name] ? `set ${PORT_SETTING[name]} to a free port` : 'choose a free port';
  return new ConfigError(`port ${port} on ${host ?? 'every interface'} (the ${name} listener) is already in use, perhaps by another Troupe: ${setting}`);
}

/**
 * Listens and returns a Closeable that stops accepting connections, lets
 * in-flight requests finish for `graceMs`, then cuts whatever is left.
 */
export async function listen(name: string, handler: RequestListener, opts: ListenOptions): Promise<{ server: Server; port: number; closer: Closeable }> {
  const { port, host, graceMs, drain } = opts;
  const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, (req, res) => {
    if (drain.draining) res.shouldKeepAlive = false;
    handler(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(err.code === 'EADDRINUSE' ? portInUse(name, host, port) : err));
    const ready = () => {
      server.off('error', reject);
      resolve();
    };
    // No host: Node binds every interface (dual-stack where IPv6 exists).
    if (host === null) server.listen(port, ready);
    else server.listen(port, host, ready);
  });
  const actual = (server.address() as { port: number }).port;
  const closer = once(name, async () => {
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => server.closeAllConnections(), graceMs);
      server.close(() => {
        clearTimeout(force);
        resolve();
      });
      server.closeIdleConnections();
    });
  });
  return { server, port: actual, closer };
}
