import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { anthropicBody, anthropicEvents, chatBody, chatChunk, chatEvents, responsesBody, responsesEvents, type FakeReply } from './llm-wire.js';

export type { FakeReply, FakeToolCall } from './llm-wire.js';

export interface SeenRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

type Kind = 'chat' | 'responses' | 'anthropic';
/** What reset() leaves alone: where the fake listens. */
const KEPT = new Set(['server', 'url']);
const KIND: Record<string, Kind> = { '/v1/chat/completions': 'chat', '/v1/responses': 'responses', '/v1/messages': 'anthropic' };

/**
 * A stand-in for the OpenAI and Anthropic APIs on 127.0.0.1: chat
 * completions and responses under `/v1` (use `openaiBase` as base_url),
 * messages at `/v1/messages` (use `anthropicBase`). It records every request,
 * answers with `reply` in the vendor's exact format, streaming or not, and
 * fails on demand.
 */
export class FakeLlmUpstream {
  readonly requests: SeenRequest[] = [];
  /** What the next calls answer; a function sees the request body. */
  reply: FakeReply | ((body: Record<string, unknown>, kind: Kind) => FakeReply) = { text: 'Hello from the fake.' };
  /** Statuses to answer the next calls with, one per call, before answering normally. */
  private readonly failures: { status: number; retryAfter?: string; message?: (req: IncomingMessage) => string }[] = [];
  /** Streams only: cut the connection after this many events. */
  cutStreamAfter: number | null = null;
  /** Streams only: delay before the first event, ms. */
  firstEventDelayMs = 0;
  /** Every answer (streaming or not): delay before it starts, ms. */
  delayMs = 0;
  /** Streams only: delay between events, ms (a slow model). */
  eventDelayMs = 0;
  /** Streams the client closed before the last event was written. */
  abortedStreams = 0;
  /** Calls, streamed or not, whose connection closed before their answer was complete. */
  closedEarly = 0;
  /**
   * Streamed chat calls only: instead of `reply`, this many text deltas (`floodPiece`), written as fast as the
   * connection takes them (a model that outruns its reader). `flooded` counts the bytes written so far, and
   * `floodBlocked` says the connection is full and the fake is waiting for it to drain.
   */
  flood: { pieces: number; pieceBytes: number } | null = null;
  flooded = 0;
  floodBlocked = false;
  /**
   * A hostile upstream: instead of `reply`, `bytes` of one answer that never ends properly, written as fast as
   * the connection takes them: a non-streamed call gets one huge JSON body, a streamed one an SSE line that never
   * ends. `oversizeSent` counts the bytes it managed to write before the connection was cut.
   */
  oversize: { bytes: number; /** Streams: this many normal text deltas first. */ afterDeltas?: number } | null = null;
  oversizeSent = 0;
  private server!: Server;
  url = '';

  /** `port`: listen where a closed fake listened, to stand for an upstream that came back. */
  static async start(port = 0): Promise<FakeLlmUpstream> {
    const f = new FakeLlmUpstream();
    f.server = createServer((req, res) => void f.handle(req, res));
    await new Promise<void>((resolve, reject) => f.server.once('error', reject).listen(port, '127.0.0.1', resolve));
    f.url = `http://127.0.0.1:${(f.server.address() as { port: number }).port}`;
    return f;
  }

  get openaiBase(): string {
    return `${this.url}/v1`;
  }

  get anthropicBase(): string {
    return this.url;
  }

  failNext(status: number, times = 1, retryAfter?: string): void {
    for (let i = 0; i < times; i++) this.failures.push({ status, retryAfter });
  }

  /** The next call fails with `status` and an error message built from the request (e.g. one echoing its key, as OpenAI does). */
  failNextSaying(status: number, message: (req: IncomingMessage) => string): void {
    this.failures.push({ status, message });
  }

  /**
   * Between scenarios: everything programmed (reply, queued failures not yet served, delays, cuts, floods) and
   * everything counted goes back to how a new fake starts, so one scenario's leftovers never reach the next. Every
   * field is reset from a new instance's, so a field added later is reset without being listed here; lists are
   * emptied in place, for a test that holds them.
   */
  reset(): void {
    const fresh = new FakeLlmUpstream() as unknown as Record<string, unknown>;
    const self = this as unknown as Record<string, unknown>;
    for (const k of Object.keys(fresh)) {
      if (KEPT.has(k)) continue;
      if (Array.isArray(self[k])) (self[k] as unknown[]).length = 0;
      else self[k] = fresh[k];
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
    const path = (req.url ?? '').split('?')[0];
    this.requests.push({ path, headers: req.headers, body });
    res.once('close', () => void (res.writableFinished || this.closedEarly++));
    const kind = KIND[path];
    if (!kind) return void res.writeHead(404).end();
    const refusal = kind === 'anthropic' ? anthropicRefusal(body) : null;
    if (refusal) return void res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: refusal } }));
    const failure = this.failures.shift();
    if (failure !== undefined) {
      const status = failure.status;
      const message = failure.message ? failure.message(req) : `fake ${status}`;
      const err = kind === 'anthropic' ? { type: 'error', error: { type: 'overloaded_error', message } } : { error: { message, type: 'server_error' } };
      res.writeHead(status, { 'content-type': 'application/json', ...(failure.retryAfter ? { 'retry-after': failure.retryAfter } : {}) }).end(JSON.stringify(err));
      return;
    }
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    if (this.oversize) return this.sendOversize(res, body.stream === true, this.oversize.bytes, String(body.model), this.oversize.afterDeltas ?? 0);
    const reply = typeof this.reply === 'function' ? this.reply(body, kind) : this.reply;
    const model = String(body.model);
    if (body.stream !== true) {
      const out = kind === 'chat' ? chatBody(model, reply) : kind === 'responses' ? responsesBody(model, reply) : anthropicBody(model, reply);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
      return;
    }
    const events = kind === 'chat' ? chatEvents(model, reply) : kind === 'responses' ? responsesEvents(model, reply) : anthropicEvents(model, reply);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    if (this.flood && kind === 'chat') return this.floodChat(res, model, this.flood);
    if (this.firstEventDelayMs) await new Promise((r) => setTimeout(r, this.firstEventDelayMs));
    let closed = false;
    res.once('close', () => (closed = !res.writableFinished));
    for (const [i, e] of events.entries()) {
      if (this.eventDelayMs) await new Promise((r) => setTimeout(r, this.eventDelayMs));
      if (closed) {
        this.abortedStreams++;
        return;
      }
      if (this.cutStreamAfter !== null && i >= this.cutStreamAfter) return void res.destroy();
      const data = typeof e.data === 'string' ? e.data : JSON.stringify(e.data);
      const frame = e.event ? `event: ${e.event}\ndata: ${data}\n\n` : `data: ${data}\n\n`;
      // When a cut is planned, each frame is flushed first so that what came before the cut really arrives.
      if (this.cutStreamAfter !== null) await new Promise<void>((r) => res.write(frame, () => setTimeout(r, 5)));
      else res.write(frame);
    }
    res.end();
  }

  /** A chat stream of `pieces` text deltas, each written as soon as the connection takes it. */
  private async floodChat(res: ServerResponse, model: string, flood: { pieces: number; pieceBytes: number }): Promise<void> {
    const send = async (data: unknown): Promise<void> => {
      const frame = `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
      this.flooded += Buffer.byteLength(frame);
      if (res.write(frame)) return;
      this.floodBlocked = true;
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
      this.floodBlocked = false;
    };
    await send(chatChunk(model, { role: 'assistant', content: '' }).data);
    for (let i = 0; i < flood.pieces && !res.destroyed; i++) await send(chatChunk(model, { content: floodPiece(i, flood.pieceBytes) }).data);
    await send(chatChunk(model, {}, 'stop').data);
    await send('[DONE]');
    res.end();
  }

  private async sendOversize(res: ServerResponse, stream: boolean, bytes: number, model: string, afterDeltas: number): Promise<void> {
    res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' });
    for (let i = 0; stream && i < afterDeltas; i++) res.write(`data: ${JSON.stringify(chatChunk(model, i === 0 ? { role: 'assistant', content: 'fine so far ' } : { content: `${i} ` }).data)}\n\n`);
    const head = stream ? 'data: {"choices":[{"delta":{"content":"' : '{"choices":[{"message":{"content":"';
    const piece = Buffer.alloc(64 * 1024, 0x61);
    let ok = res.write(head);
    this.oversizeSent += head.length;
    while (this.oversizeSent < bytes && !res.destroyed) {
      if (!ok) {
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off('drain', done);
            res.off('close', done);
            resolve();
          };
          res.on('drain', done);
          res.on('close', done);
        });
        if (res.destroyed) return;
      }
      ok = res.write(piece);
      this.oversizeSent += piece.length;
    }
    if (!res.destroyed) res.end(stream ? '"}}]}\n\n' : '"}}]}');
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

/** Anthropic models that refuse sampling parameters and thinking budgets, as Claude Opus 4.7 and later do. */
export const ADAPTIVE_ONLY_MODEL = 'claude-opus-4-7';

/**
 * What Anthropic's API refuses with a 400 that the OpenAI APIs take: an empty or blank text block, at the top of a
 * message or in a tool result; and, from an adaptive-only model, a sampling parameter or a thinking budget.
 */
function anthropicRefusal(body: Record<string, unknown>): string | null {
  if (String(body.model).startsWith(ADAPTIVE_ONLY_MODEL)) {
    for (const p of ['temperature', 'top_p', 'top_k']) if (body[p] !== undefined) return `\`${p}\` is deprecated for this model.`;
    if ((body.thinking as { type?: string } | undefined)?.type === 'enabled') return 'thinking.type.enabled is not supported for this model. Use thinking.type.adaptive and output_config.effort to control thinking behavior.';
  }
  type Block = { type?: string; text?: unknown; content?: unknown };
  const blocks = (content: unknown): Block[] => (Array.isArray(content) ? (content as Block[]) : []);
  for (const m of blocks(body.messages)) {
    for (const b of blocks((m as { content?: unknown }).content)) {
      for (const t of [b, ...(b.type === 'tool_result' ? blocks(b.content) : [])]) {
        if (t.type === 'text' && String(t.text ?? '').trim() === '') return 'messages: text content blocks must be non-empty';
      }
    }
  }
  return null;
}

/** The i-th text delta of a flood: its number, then filler, `bytes` long, so a lost or reordered piece shows. */
export function floodPiece(i: number, bytes: number): string {
  const head = `[${i}]`;
  return head + 'x'.repeat(Math.max(0, bytes - head.length));
}
