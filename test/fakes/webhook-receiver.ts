import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** One request as the receiver saw it: the raw body bytes as text, before any parsing. */
export interface ReceivedWebhook {
  path: string;
  headers: IncomingMessage['headers'];
  rawBody: string;
  at: number;
  /** The answer it was given (a delayed one may have come after the sender gave up). */
  answer: ScriptedAnswer;
}

/** How the receiver answers one request. */
export interface ScriptedAnswer {
  status: number;
  headers?: Record<string, string>;
  /** Wait this long before answering (timeouts). */
  delayMs?: number;
  /** A hostile receiver: answer with a body this long, written as fast as the connection takes it (`answerSent` counts it). */
  bodyBytes?: number;
}

/**
 * A client's webhook endpoint on 127.0.0.1: a real node:http server that
 * records every request and answers with scripted statuses, one per request,
 * then `fallback` (200).
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  /** TCP connections accepted, whether or not they carried a request (an SSRF test wants 0). */
  connections = 0;
  /** Bytes of `bodyBytes` answers written before the sender stopped reading or cut the connection. */
  answerSent = 0;
  private readonly script: ScriptedAnswer[] = [];
  fallback: ScriptedAnswer = { status: 200 };
  private server!: Server;
  private readonly waiters: Array<() => void> = [];
  url = '';

  static async start(): Promise<WebhookReceiver> {
    const r = new WebhookReceiver();
    await r.listen(0);
    return r;
  }

  private async listen(port: number): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.on('connection', () => this.connections++);
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  /** Stops listening (connections are refused) and keeps what it received. */
  async down(): Promise<void> {
    await this.close();
  }

  /** Listens again on the same port. */
  async up(): Promise<void> {
    await this.listen(Number(new URL(this.url).port));
  }

  /** Answers the next requests with these, in order. */
  answer(...answers: ScriptedAnswer[]): void {
    this.script.push(...answers);
  }

  reset(): void {
    this.received.length = 0;
    this.connections = 0;
    this.answerSent = 0;
    this.script.length = 0;
    this.fallback = { status: 200 };
  }

  /** Resolves once `count` requests (to `path`, if given) have arrived. */
  async waitFor(count: number, path?: string, ms = 15_000): Promise<ReceivedWebhook[]> {
    const deadline = Date.now() + ms;
    const seen = () => this.received.filter((r) => path === undefined || r.path === path);
    while (seen().length < count) {
      if (Date.now() > deadline) throw new Error(`receiver got ${seen().length} of ${count} requests in ${ms} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return seen();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const a = this.script.shift() ?? this.fallback;
    this.received.push({ path: req.url ?? '/', headers: req.headers, rawBody: Buffer.concat(chunks).toString('utf8'), at: Date.now(), answer: a });
    if (a.delayMs) await new Promise((r) => setTimeout(r, a.delayMs));
    res.writeHead(a.status, a.headers ?? {});
    this.waiters.splice(0).forEach((w) => w());
    if (a.bodyBytes) return this.flood(res, a.bodyBytes);
    res.end(a.status >= 300 ? 'no' : 'ok');
  }

  private async flood(res: ServerResponse, bytes: number): Promise<void> {
    const piece = Buffer.alloc(64 * 1024, 0x62);
    let closed = false;
    res.once('close', () => (closed = true));
    while (this.answerSent < bytes && !closed) {
      this.answerSent += piece.length;
      if (!res.write(piece)) await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    }
    if (!closed) res.end();
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
