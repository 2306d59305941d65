import Router from '@koa/router';
import type { Middleware } from 'koa';
import { InvalidRequestError, MethodNotAllowedError, RouteNotFoundError } from '../../domain/errors.js';
import { compile, type JsonSchema } from '../../lib/schemas/validator.js';
import { clientAddress } from './client-address.js';
import { hasBody, parseJsonBody, refuseContentEncoding } from './middleware/body.js';
import { parsePage, querySchema } from './pagination.js';
import type { KeyAuthenticator } from './middleware/auth.js';
import type { RequestLimiter } from '../../lib/limits/request-limiter.js';
import type { AppState, Ctx, RouteSpec } from './types.js';

/** `/v1/agents/{agent_id}` → `/v1/agents/:agent_id` */
export function koaPath(path: string): string {
  return path.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');
}

/** Mounts route specs on a Koa router: auth, rate limits, then body validation, then the handler. */
export function mountRoutes(specs: RouteSpec[], auth: KeyAuthenticator, maxBodyBytes: number, limiter?: RequestLimiter): Router<AppState> {
  const router = new Router<AppState>();
  for (const spec of specs) {
    // Compile now: a broken schema fails the process at start, not a request later.
    if (spec.body) compile(spec.body.schema);
    const query = querySchema(spec);
    const takesBody = spec.body !== undefined || spec.rawBody !== undefined;
    const mw: Middleware<AppState> = async (koaCtx) => {
      const ctx = koaCtx as unknown as Ctx;
      ctx.state.route = spec.path;
      if ((spec.auth ?? 'api') === 'api') {
        const who = (ctx.state.auth = await auth.authenticate(ctx.get('Authorization') || undefined, 'api', clientAddress(ctx.req)));
        // Counted once authenticated, before the body is read: a refused request costs little.
        if (limiter) ctx.set(await limiter.admit('api', who.orgId, who.key._id));
      }
      if (query) checkQueryValues(query, ctx.query);
      if (spec.list) ctx.state.page = parsePage(ctx.query, spec.list.cursor);
      // Here for every route that takes a body, whoever reads it (the JSON parser below, an upload's handler).
      if (takesBody && hasBody(ctx.req)) refuseContentEncoding(ctx.req.headers);
      if (spec.body) await parseJsonBody(ctx, spec.body, maxBodyBytes);
      const result = await spec.handler(ctx);
      if (result !== undefined) {
        ctx.status = spec.status ?? 200;
        ctx.body = result;
      } else if (ctx.body === undefined && ctx.status === 404) {
        ctx.status = spec.status ?? 204;
      }
    };
    router.register(koaPath(spec.path), [spec.method], mw);
  }
  return router;
}

/** The order methods are listed in an `Allow` header. */
const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * The last middleware: a request no route answered. A path the table serves with other methods is a 405 whose
 * `Allow` lists them (HEAD wherever GET is: the router answers it from the GET route), read from the mounted
 * table itself so the two cannot drift apart; OPTIONS is no exception, as nothing serves it. Any other path is a 404.
 */
export function unmatchedRoute(router: Router<AppState>): Middleware<AppState> {
  return async (ctx) => {
    if (ctx.body !== undefined || ctx.status !== 404) return;
    const served = new Set(router.match(ctx.path, ctx.method).path.flatMap((layer) => layer.methods));
    const allowed = METHOD_ORDER.filter((m) => served.has(m));
    if (allowed.length > 0 && !served.has(ctx.method)) throw new MethodNotAllowedError(ctx.method, ctx.path, allowed);
    throw new RouteNotFoundError(ctx.method, ctx.path);
  };
}

/**
 * A query parameter whose schema lists its values must have one of them. Handlers read such
 * parameters as "this value or not", so a typo (`?format=xml`, `?deltas=yes`) was answered as if
 * the parameter were absent. Other parameters are the handlers' to check (numbers, cursors).
 */
function checkQueryValues(schema: JsonSchema, query: Record<string, string | string[] | undefined>): void {
  const props = (schema.properties ?? {}) as Record<string, { enum?: unknown[] }>;
  for (const [name, prop] of Object.entries(props)) {
    const value = query[name];
    if (value === undefined || !prop.enum) continue;
    if (typeof value !== 'string' || !prop.enum.includes(value)) {
      throw new InvalidRequestError(`${name} must be one of: ${prop.enum.map((v) => JSON.stringify(v)).join(', ')}.`, name);
    }
  }
}
