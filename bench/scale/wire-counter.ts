import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy in front of a MongoDB-wire server that counts the
 * requests clients send (each wire message starts with its int32 length), so
 * a benchmark can report MongoDB round trips per user message without
 * touching the code under test.
 */
export class WireCounter {
  requests = 0;
  private server!: Server;
  private readonly sockets = new Set<Socket>();
  port = 0;

  static async start(target: { host: string; port: number }): Promise<WireCounter> {
    const c = new WireCounter();
    c.server = createServer((client) => c.pipe(client, target));
    await new Promise<void>((resolve) => c.server.listen(0, '127.0.0.1', resolve));
    c.port = (c.server.address() as { port: number }).port;
    return c;
  }

  private pipe(client: Socket, target: { host: string; port: number }): void {
    const upstream = connect(target.port, target.host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => (s === client ? upstream : client).destroy());
    }
    // Count whole messages in the client -> server direction.
    let pending: Buffer = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      while (pending.length >= 4) {
        const len = pending.readInt32LE(0);
        if (pending.length < len) break;
        this.requests++;
        pending = pending.subarray(len);
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    client.on('end', () => upstream.end());
    upstream.on('end', () => client.end());
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
