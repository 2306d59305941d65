import { TcpProxy } from '../../support/tcp-proxy.js';

/** Polls `fn` every 100 ms until it returns something truthy; null once `ms` passed. Returns how long it took. */
export async function within<T>(ms: number, fn: () => T | null | undefined | false | Promise<T | null | undefined | false>): Promise<{ value: T; ms: number } | null> {
  const start = Date.now();
  for (;;) {
    const value = await fn();
    if (value) return { value, ms: Date.now() - start };
    if (Date.now() - start > ms) return null;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A proxy in front of the server at `url` (redis:// or mongodb://, on loopback), and the same URL pointed at the proxy. */
export async function proxyFor(url: string): Promise<{ proxy: TcpProxy; url: string }> {
  const u = new URL(url);
  const proxy = new TcpProxy(Number(u.port));
  await proxy.start();
  u.port = String(proxy.port);
  return { proxy, url: u.toString() };
}
