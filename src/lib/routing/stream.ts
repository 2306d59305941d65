import type { ServerResponse } from 'node:http';
import type { Metrics } from '../metrics/metrics.js';
import type { LlmClient } from '../llm/client.js';
import { UpstreamError } from '../llm/errors.js';
import type { EventStream } from '../llm/event-stream.js';
import type { StreamEvent } from '../llm/types.js';
import type { Stickiness } from './conversation.js';
import type { RoutingLookup } from './lookup.js';
import type { Cancel } from '../llm/upstream-post.js';
import type { Exchange } from './exchange.js';
import type { UsageBuffer } from './usage-buffer.js';
import { countFallback, countSelected, exhausted, isRetryable, requestFor, routingInfo, settle, upstreamFailure, type RoutedCall } from './routed-call.js';

export interface StreamServices {
  lookup: RoutingLookup;
  client: LlmClient;
  stickiness: Stickiness;
  usage: UsageBuffer;
  metrics?: Metrics;
}

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

/**
 * Streams a routed call. Each candidate is tried until one produces its first
 * content event; only then are headers sent, so a failure before that falls
 * back invisibly. After it, events are translated and written one by one, and
 * a failure ends the stream with the format's error event, never silently.
 */
export async function streamRouted(ex: Exchange, call: RoutedCall, svc: StreamServices): Promise<void> {
  const gone = ex.clientGone;
  const failures: string[] = [];
  for (const c of call.selection.order) {
    let events: EventStream | undefined;
    let head: StreamEvent[] = [];
    try {
      events = await svc.client.openStream(requestFor(call, c), await svc.lookup.target(call.orgId, c), gone);
      for (let batch = await events.read(); batch !== null; batch = await events.read()) {
        head = head.length === 0 ? batch : head.concat(batch);
        if (batch.some(isContent)) break;
      }
      if (!head.some(isContent)) throw new UpstreamError('upstream stream ended without content', true);
    } catch (e) {
      events?.close();
      if (gone.aborted) return;
      if (!isRetryable(e)) throw upstreamFailure(e, failures);
      failures.push(`${c.model}: ${e.message}`);
      countFallback(svc.metrics, c);
      call.log().warn({ model: c.model, err: e.message }, 'routing fallback before first byte');
      continue;
    }
    countSelected(svc.metrics, call, c, failures);
    return pump(ex.res, call, svc, c, failures, head, events, gone);
  }
  throw exhausted(failures);
}

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
async function pump(res: ServerResponse, call: RoutedCall, svc: StreamServices, c: RoutedCall['selection']['order'][number], failures: string[], head: StreamEvent[], events: EventStream, signal: Cancel): Promise<void> {
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
