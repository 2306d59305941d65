import { within } from '../../../../domain/deadline.js';
import { InvalidRequestError, UnavailableError } from '../../../../domain/errors.js';
import { endedMessageId } from '../../../../domain/ledger.js';
import type { AppDeps } from '../../deps.js';
import { parseLastEventId, SessionStream, type LiveEnvelope } from '../../sse/session-stream.js';
import { StreamSlots } from '../../sse/stream-slots.js';
import { requireAuth, type RouteSpec } from '../../types.js';
import { assistantDeltaRef, ledgerEventRef } from './ledger-events.js';
import { runtimeOf, sessionOr404 } from './session-commands.js';
import { decodeSessionEvents, SESSION_DELETED } from '../../../../lib/pubsub/session-events.js';

/** How soon a client cut off by a shutdown reconnects; long enough for the load balancer to have noticed /readyz. */
export const DRAIN_RETRY_MS = 1000;

/** How long a new stream waits for Redis to confirm its subscription before it starts from the ledger anyway. */
export const SUBSCRIBE_WAIT_MS = 1000;

/** How soon a client cut off for not reading is told to come back. */
export const STALLED_RETRY_MS = 5000;

/** After a stalled stream's `retry:` hint, how long its client has to read it before the socket is closed. */
const STALLED_GRACE_MS = 5000;

/** GET /v1/sessions/{id}/stream: backfill after Last-Event-ID, then live, with heartbeats. */
export function streamRoutes(deps: AppDeps): RouteSpec[] {
  const { sseStreamsPerOrg, sseStreamsPerKey, sseStallMs } = deps.config.buffers;
  const slots = new StreamSlots(sseStreamsPerOrg, sseStreamsPerKey, (scope) => deps.metrics.rateLimitRefusals.inc({ surface: 'streams', scope }));
  return [
    {
      method: 'GET',
      path: '/v1/sessions/{session_id}/stream',
      summary: 'Server-Sent Events of the session ledger; resumes after Last-Event-ID (header or last_event_id query); ?deltas=true adds ephemeral assistant.delta records.',
      tag: 'events',
      query: { type: 'object', properties: { last_event_id: { type: 'string', pattern: '^(?:[^:]+:)?[0-9]{1,15}$', description: 'Resume after this event id (<session_id>:<n>, the session\'s own id, or just <n>); the Last-Event-ID header wins.' }, deltas: { type: 'string', enum: ['true', 'false'], description: 'Also send ephemeral assistant.delta records.' } } },
      responseContent: {
        'text/event-stream': {
          // OpenAPI 3.1 reads an event stream's schema as one event's: the SSE fields as a client's parser yields them.
          type: 'object',
          required: ['event', 'data'],
          properties: {
            id: { type: 'string' },
            event: { type: 'string' },
            data: { type: 'string', contentMediaType: 'application/json', contentSchema: { oneOf: [ledgerEventRef, assistantDeltaRef] } },
            retry: { type: 'integer' },
          },
          description: 'SSE records `id: <session_id>:<n>`, `event: <ledger event type>`, `data: <event envelope JSON>`; `: heartbeat` comments every 15 s; a `retry:` field before the server ends the stream (a shutdown, or a client that read nothing for TROUPE_SSE_STALL_MS); resume with Last-Event-ID. Open streams are capped per org and per API key (429 `concurrency_limited` with Retry-After).',
        },
      },
      handler: async (ctx) => {
        const auth = requireAuth(ctx);
        // A draining process would accept a stream only to end it at once: refuse it, so the client's next try
        // (after Retry-After, by when the load balancer has seen /readyz) reaches another process.
        if (deps.drain?.draining) {
          throw new UnavailableError('This process is shutting down; reconnect (with Last-Event-ID) to resume.', 'draining', { 'Retry-After': String(Math.ceil(DRAIN_RETRY_MS / 1000)) });
        }
        const session = await sessionOr404(deps, auth.orgId, ctx.params.session_id);
        const header = ctx.get('Last-Event-ID');
        // A 400 names the one the client used, the header or the query parameter.
        const param = header ? 'Last-Event-ID' : 'last_event_id';
        const raw = header || (typeof ctx.query.last_event_id === 'string' ? ctx.query.last_event_id : undefined);
        const after = parseLastEventId(raw, session._id);
        if (after === null) throw new InvalidRequestError(`${param} must be an event id of this session, like ${session._id}:12.`, param);
        // An id the ledger does not have yet was never sent: resuming after it would skip the events up to it. The
        // session document may trail the ledger by a turn in flight, so only an id past it asks the ledger.
        if (after > session.last_sequence && !(await deps.stores.ledger.get(session._id, after))) {
          throw new InvalidRequestError(`${param} ${session._id}:${after} is past the session's last event; resume from an id the stream sent.`, param);
        }
        const { hub, streamReads } = runtimeOf(deps);
        const release = slots.acquire(auth.orgId, ctx.state.auth!.key._id);
        const stream = new SessionStream(streamReads, session._id, after, {
          stallMs: sseStallMs,
          onStall: () => {
            deps.metrics.sseStalled.inc();
            unsubscribe();
            offDrain();
            stream.drain(STALLED_RETRY_MS, 'client too far behind');
            // The hint sits behind what the client has not read; a client that reads nothing more is let go.
            const socket = ctx.req.socket;
            setTimeout(() => socket.destroy(), STALLED_GRACE_MS).unref();
          },
        });
        // Subscribe before the backfill, so nothing appended in between is missed.
        const ended = new Set<string>();
        const events = hub.listen(deps.keys.sessionEvents(session._id), (msg) => {
          const batch: LiveEnvelope[] = [];
          for (const item of decodeSessionEvents(msg)) {
            // A deleted session's stream ends; a reconnect gets 404.
            if (item.ev.type === SESSION_DELETED) return stop();
            const endedId = endedMessageId(item.ev);
            if (endedId) ended.add(endedId);
            batch.push(item as LiveEnvelope);
          }
          stream.onLive(batch);
        });
        // Token deltas are opt-in: they are ephemeral and most clients only want the ledger.
        // Both channels arrive over one connection in publish order, so a delta a
        // worker sent after its message ended (cancelled mid-stream) is dropped here.
        const onDelta = (msg: string) => {
          const id = (JSON.parse(msg) as { message_id?: string }).message_id;
          if (!id || !ended.has(id)) stream.sendEphemeral('assistant.delta', msg);
        };
        const deltas = ctx.query.deltas === 'true' ? hub.listen(deps.keys.sessionDeltas(session._id), onDelta) : null;
        const offResubscribed = hub.onResubscribed(() => stream.catchUp());
        // A subscriber cut off from Redis confirms only once the cut heals: the backfill does not wait for it, and
        // what was appended until the confirmation is read from the ledger then.
        const confirmed = Promise.all([events.confirmed, deltas?.confirmed]);
        const settled = confirmed.then(() => true, () => true);
        if (!(await within(settled, SUBSCRIBE_WAIT_MS, () => false))) void confirmed.then(() => stream.catchUp(), () => undefined);
        // The SSE client gauge follows the subscription: counted once, released once, however the stream ends.
        deps.metrics.sseClients.inc();
        let subscribed = true;
        const unsubscribe = () => {
          if (!subscribed) return;
          subscribed = false;
          release();
          deps.metrics.sseClients.dec();
          events.stop();
          deltas?.stop();
          offResubscribed();
        };
        const stop = () => {
          unsubscribe();
          offDrain();
          stream.close();
        };
        const offDrain = deps.drain?.onDrain(() => {
          unsubscribe();
          stream.drain(DRAIN_RETRY_MS);
        }) ?? (() => undefined);
        ctx.req.once('close', stop);
        stream.out.once('close', unsubscribe);
        // A client gone during the subscription wait sent its 'close' before anyone listened: free its slot now.
        if (ctx.req.socket.destroyed) return void stop();
        ctx.req.socket.setTimeout(0);
        ctx.req.socket.setNoDelay(true);
        ctx.set({ 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache, no-transform', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
        ctx.status = 200;
        ctx.body = stream.out;
        stream.start().catch((err: Error) => {
          ctx.state.log.warn({ err: err.message }, 'stream backfill failed');
          stop();
        });
        return undefined;
      },
    },
  ];
}
