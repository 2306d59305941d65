import { createServer, connect, type Server, type Socket } from 'node:net';

/** One proxied connection: the client's socket and, once connected, the target's. */
interface Pair {
  client: Socket;
  upstream: Socket | null;
  /** The target closed it while partitioned: the client was not told, and is reset on its next write. */
  severed?: boolean;
}

/**
 * A loopback TCP proxy for fault tests: a test points one process at it
 * instead of a server, and then
 *  - `dropAll()` cuts every connection (destroyed on both sides, as a reset):
 *    the peer sees a closed connection at once;
 *  - `blackhole()` partitions: the sockets stay open, nothing more is read
 *    from either side, so nothing reaches the other end and nothing is
 *    refused; what a peer writes stays in the kernel's buffers (and then in
 *    its own), as with TCP retransmitting into a dead link. New connections
 *    are accepted and held with no target, as a connect that goes unanswered;
 *  - `sever()`, while partitioned: the target gives up on every connection
 *    (Redis dropping a subscriber past its output-buffer limit, a server's
 *    keepalive or retransmission timeout) and its close is lost in the
 *    partition: the target's side closes, the client's stays open and silent;
 *  - `heal()` ends the partition: what was held is delivered, in order, as
 *    TCP delivers it once the link is back (a partition longer than the
 *    peers' keepalive or retransmission timeout ends in a reset instead:
 *    `dropAll()` then `heal()`). A severed connection stays half-open: the
 *    client hears nothing until it writes, and its first write is reset, as a
 *    peer that forgot the connection answers it.
 * The proxy itself buffers nothing and drops no byte of a connection it keeps.
 */
export class TcpProxy {
  private server: Server | null = null;
  private readonly pairs = new Set<Pair>();
  private holding = false;
  port = 0;
  drops = 0;
  /** Connections the target gave up on while partitioned (`sever`). */
  severed = 0;
  /** Connections accepted while partitioned (held until `heal`). */
  heldConnects = 0;

  constructor(private readonly targetPort: number) {}

  async start(): Promise<string> {
    this.server = createServer((client) => {
      const pair: Pair = { client, upstream: null };
      this.pairs.add(pair);
      client.on('error', () => this.close1(pair)).on('close', () => this.close1(pair));
      if (this.holding) {
        this.heldConnects++;
        client.pause();
      } else this.link(pair);
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
    return `http://127.0.0.1:${this.port}`;
  }

  get partitioned(): boolean {
    return this.holding;
  }

  private link(pair: Pair): void {
    const upstream = connect(this.targetPort, '127.0.0.1');
    pair.upstream = upstream;
    upstream.on('error', () => this.upstreamClosed(pair)).on('close', () => this.upstreamClosed(pair));
    this.forward(pair.client, upstream);
    this.forward(upstream, pair.client);
  }

  /** Copies `from` to `to` with backpressure, and stops reading while partitioned. */
  private forward(from: Socket, to: Socket): void {
    from.on('data', (chunk: Buffer) => {
      if (!to.write(chunk)) from.pause();
    });
    to.on('drain', () => {
      if (!this.holding) from.resume();
    });
    if (this.holding) from.pause();
  }

  /** A target's close reaches the client at once, unless the partition holds it. */
  private upstreamClosed(pair: Pair): void {
    if (!this.holding) return this.close1(pair);
    pair.severed = true;
  }

  private close1(pair: Pair): void {
    pair.client.destroy();
    pair.upstream?.destroy();
    this.pairs.delete(pair);
  }

  /** Stops every byte both ways, keeping every connection open (a partition, not a close). */
  blackhole(): void {
    this.holding = true;
    for (const { client, upstream } of this.pairs) {
      client.pause();
      upstream?.pause();
    }
  }

  /** While partitioned: the target closes every connection; the clients are not told (see the class comment). Returns how many. */
  sever(): number {
    if (!this.holding) throw new Error('sever() is for a partition: blackhole() first');
    let n = 0;
    for (const pair of this.pairs) {
      if (!pair.upstream || pair.severed) continue;
      pair.severed = true;
      pair.upstream.destroy();
      n++;
    }
    this.severed += n;
    return n;
  }

  /** Ends the partition: held connections reach the target, held bytes flow on. */
  heal(): void {
    this.holding = false;
    for (const pair of this.pairs) {
      if (pair.severed) {
        // Half-open: the client's next bytes meet a peer that no longer knows the connection.
        pair.client.removeAllListeners('data');
        pair.client.once('data', () => this.close1(pair));
        pair.client.resume();
        continue;
      }
      if (!pair.upstream) this.link(pair);
      pair.client.resume();
      pair.upstream!.resume();
    }
  }

  /** Destroys every open connection (a reset); returns how many were cut. */
  dropAll(): number {
    const n = this.pairs.size;
    for (const pair of [...this.pairs]) this.close1(pair);
    this.drops += n;
    return n;
  }

  async close(): Promise<void> {
    this.holding = false;
    this.dropAll();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
