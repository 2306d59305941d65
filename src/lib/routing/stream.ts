import type { ServerResponse } from 'node:http';
import type { LlmClient } from '../llm/client.js';
import { UpstreamError } from '../llm/errors.js';
import type { EventStream } from '../llm/event-stream.js';
import type { LlmRequest, StreamEvent, Target } from '../llm/types.js';
import type { Cancel } from '../llm/upstream-post.js';
import type { CandidateDoc } from '../../domain/views/router.js';
import { startExchange, type Exchange } from './exchange.js';
import type { CallMode, RoutingServices } from './route-call.js';
import { routingInfo, settle, type RoutedCall } from './routed-call.js';

/** Text, tool-call arguments, a tool call's opening or the end: the upstream has really answered. */
const isContent = (ev: StreamEvent) => ev.type === 'text' || ev.type === 'args' || ev.type === 'finish' || (ev.type === 'block_start' && ev.block.type === 'tool_call');

function write(res: ServerResponse, text: string): Promise<void> | void {
  if (text === '' || res.writableEnded || res.destroyed) return;
  if (!res.write(text)) return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** A stream that has produced content: its events so far (`head`) and the rest to read. */
interface Opened {
  events: EventStream;
  head: StreamEvent[];
}

/**
 * A candidate's stream, read until its first content event; only that commits to the candidate, so a failure
 * before it (an error status, a stream that ends empty) falls back invisibly: no header has been sent yet.
 */
async function openUntilContent(client: LlmClient, req: LlmRequest, target: Target, signal: Cancel | undefined): Promise<Opened> {
  const events = await client.openStream(req, target, signal);
  let head: StreamEvent[] | null = null;
  try {
    for (let batch = await events.read(); batch !== null; batch = await events.read()) {
      head = head === null ? batch : head.concat(batch);
      if (batch.some(isContent)) return { events, head };
    }
  } catch (e) {
    events.close();
    throw e;
  }
  events.close();
  throw new UpstreamError('upstream stream ended without content', true);
}

/**
 * A streamed routed call on the routing interface. After the first content the headers are sent and events are
 * translated and written one read at a time; a failure from then on ends the stream with the format's error event,
 * never silently, and never falls back. A client that hangs up before that ends the call quietly.
 */
export const SSE_RELAY: CallMode<Opened, void, Exchange> = {
  timing: 'first_token',
  start: startExchange,
  attempt: openUntilContent,
  // Settled on the finish event, in pump.
  usage: () => null,
  answer: (o, call, c, failures, svc, ex) => pump(ex.res, call, svc, c, failures, o.head, o.events, ex.clientGone),
  cancelled: () => undefined,
};

/**
 * Holds the client socket corked until this turn of the event loop has run its
 * I/O callbacks: events that arrived in one upstream read leave in one write,
 * and when the upstream's end came in that read too, the stream's end goes
 * with them instead of costing a write (and a client wake-up) of its own.
 */
function batcher(res: ServerResponse): () => void {
  let corked = false;
  return () => {
    const socket = res.socket;
    if (corked || !socket || socket.destroyed) return;
    corked = true;
    socket.cork();
    setImmediate(() => {
      corked = false;
      socket.uncork();
    });
  };
}

/**
 * Sends what is written so far at once. Node flushes a response's writes on the next tick, which comes
 * only after every event of the current upstream read has been translated; the first content should not wait.
 */
function flushNow(res: ServerResponse): void {
  const socket = res.socket;
  if (socket) while (socket.writableCorked > 0) socket.uncork();
}

/**
 * Relays the stream: each read's events (one upstream chunk's worth, or more) are translated into one string and
 * written at once, so a chunk costs the client socket one write, not one per event.
 */
async function pump(res: ServerResponse, call: RoutedCall, svc: RoutingServices, c: CandidateDoc, failures: readonly string[], head: StreamEvent[], events: EventStream, signal: Cancel): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
  const enc = call.ingress.wire.encoder(routingInfo(call, c, failures), call.req.tools);
  const encode = (batch: StreamEvent[]): string => {
    let text = '';
    for (const ev of batch) {
      if (ev.type === 'finish') settle(call, c, ev.usage, svc.stickiness, svc.usage);
      text += enc.encode(ev);
    }
    return text;
  };
  const batch = batcher(res);
  try {
    await write(res, encode(head));
    flushNow(res);
    for (let evs = await events.read(); evs !== null; evs = await events.read()) {
      batch();
      await write(res, encode(evs));
    }
  } catch (e) {
    if (!signal.aborted) {
      call.log().warn({ model: c.model, err: (e as Error).message }, 'routed stream failed after it started');
      await write(res, enc.error(`The model stream failed after it started: ${(e as Error).message}`));
    }
  } finally {
    events.close();
    res.end();
  }
}
