import { createServer, type RequestListener, type Server } from 'node:http';
import { ConfigError } from '../lib/config/config.js';
import type { Drain } from '../lib/lifecycle/drain.js';
import type { Closeable } from '../domain/closeable.js';
import { once } from '../lib/lifecycle/shutdown.js';
import type { ErrorEnvelope } from '../edge/api/middleware/errors.js';
import type { Logger } from '../lib/log/logger.js';
import { answerClientError } from './client-error.js';
import { guardedListener } from './guarded-listener.js';

export interface ListenOptions {
  port: number;
  /** The variable that set `port`, named when it cannot be bound. */
  setting: string;
  /** null: every interface. */
  host: string | null;
  /** How long in-flight requests may run once the listener stops accepting; then the rest are cut. */
  graceMs: number;
  /** Once draining begins, every answer closes its connection, moving keep-alive clients elsewhere. */
  drain: Drain;
  /** Where a throw that escaped the app is logged. */
  log: Logger;
  /** How an escaped throw is told to the client: the ingress's own error envelope (default: the base API's). */
  envelope?: ErrorEnvelope;
}

/**
 * Listens and returns a Closeable that stops accepting connections, lets
 * in-flight requests finish for `graceMs`, then cuts whatever is left.
 */
export async function listen(name: string, handler: RequestListener, opts: ListenOptions): Promise<{ server: Server; port: number; closer: Closeable }> {
  const { port, host, graceMs, drain, setting } = opts;
  const guarded = guardedListener(handler, opts.log, opts.envelope);
  const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, (req, res) => {
    if (drain.draining) res.shouldKeepAlive = false;
    guarded(req, res);
  });
  server.on('clientError', answerClientError);
  await new Promise<void>((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException) => {
      // An operator's mistake (a port taken, a privileged port, an address not on this host): one line, no stack.
      const why = { EADDRINUSE: 'is already in use', EACCES: 'needs privileges this process lacks', EADDRNOTAVAIL: 'is not an address of this host' }[err.code ?? ''];
      reject(why ? new ConfigError(`${setting}: cannot listen on ${host ?? '*'}:${port}: it ${why}`) : err);
    };
    server.once('error', failed);
    const ready = () => {
      server.off('error', failed);
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
