import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy whose connections can be cut on demand: the way to
 * drop a client's stream for real (RST-like destroy on both sides) while the
 * server keeps running.
 */
export class TcpProxy {
  private server: Server | null = null;
  private readonly pairs = new Set<[Socket, Socket]>();
  port = 0;
  drops = 0;

  constructor(private readonly targetPort: number) {}

  async start(): Promise<string> {
    this.server = createServer((client) => {
      const upstream = connect(this.targetPort, '127.0.0.1');
      const pair: [Socket, Socket] = [client, upstream];
      this.pairs.add(pair);
      const close = () => {
        client.destroy();
        upstream.destroy();
        this.pairs.delete(pair);
      };
      client.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
    return `http://127.0.0.1:${this.port}`;
  }

  /** Destroys every open connection; returns how many were cut. */
  dropAll(): number {
    const n = this.pairs.size;
    for (const [a, b] of [...this.pairs]) {
      a.destroy();
      b.destroy();
    }
    this.pairs.clear();
    this.drops += n;
    return n;
  }

  async close(): Promise<void> {
    this.dropAll();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
