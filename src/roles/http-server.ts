import { createServer, type RequestListener, type Server } from 'node:http';
import { once, type Closeable } from '../lifecycle/shutdown.js';

/**
 * Listens and returns a Closeable that stops accepting connections, lets
 * in-flight requests finish for `graceMs`, then cuts long-lived ones (SSE).
 */
export async function listen(name: string, handler: RequestListener, port: number, host: string | null, graceMs: number): Promise<{ server: Server; port: number; closer: Closeable }> {
  const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const ready = () => {
      server.off('error', reject);
      resolve();
    };
    // No host: Node binds every interface (dual-stack where IPv6 exists).
    if (host === null) server.listen(port, ready);
    else server.listen(port, host, ready);
  });
  const actual = (server.address() as { port: number }).port;
  const closer = once(name, () =>
    new Promise<void>((resolve) => {
      const force = setTimeout(() => server.closeAllConnections(), graceMs);
      server.close(() => {
        clearTimeout(force);
        resolve();
      });
      server.closeIdleConnections();
    }),
  );
  return { server, port: actual, closer };
}
