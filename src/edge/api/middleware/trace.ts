import type { Middleware } from 'koa';
import { inSpan, remoteContext, tracingOn } from '../../../lib/telemetry/tracing.js';
import type { AppState } from '../types.js';

/**
 * A server span per request, continuing the caller's W3C `traceparent` when it sends one. Outermost, so the
 * access-log line and everything the request causes (the ask to the session actor and its queue hop) are inside
 * it. Named `<METHOD> <route>` once the route is known (the route table's pattern, never the ids in the path).
 */
export function traceRequests(): Middleware<AppState> {
  return (ctx, next) => {
    if (!tracingOn()) return next();
    const headers = ctx.req.headers;
    return inSpan(ctx.method, 'server', { 'http.request.method': ctx.method, 'url.path': ctx.path }, async (span) => {
      try {
        await next();
      } finally {
        const route = ctx.state.route ?? 'unmatched';
        span.rename(`${ctx.method} ${route}`);
        span.setAll({ 'http.route': route, 'http.response.status_code': ctx.status, 'troupe.request_id': ctx.state.requestId });
        if (ctx.status >= 500) span.fail(`HTTP ${ctx.status}`, String(ctx.status));
      }
    }, remoteContext(headers));
  };
}
