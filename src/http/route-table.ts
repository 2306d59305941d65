import Router from '@koa/router';
import type { Middleware } from 'koa';
import { compile } from '../schemas/validator.js';
import { parseJsonBody } from './middleware/body.js';
import type { KeyAuthenticator } from './middleware/auth.js';
import type { AppState, Ctx, RouteSpec } from './types.js';

/** `/v1/agents/{agent_id}` → `/v1/agents/:agent_id` */
export function koaPath(path: string): string {
  return path.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');
}

/** Mounts route specs on a Koa router: auth, then body validation, then the handler. */
export function mountRoutes(specs: RouteSpec[], auth: KeyAuthenticator, maxBodyBytes: number): Router<AppState> {
  const router = new Router<AppState>();
  for (const spec of specs) {
    // Compile now: a broken schema fails the process at start, not a request later.
    if (spec.body) compile(spec.body.schema);
    const mw: Middleware<AppState> = async (koaCtx) => {
      const ctx = koaCtx as unknown as Ctx;
      ctx.state.route = spec.path;
      if ((spec.auth ?? 'api') === 'api') ctx.state.auth = await auth.authenticate(ctx.get('Authorization') || undefined, 'api');
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
