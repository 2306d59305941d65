import type { ParameterizedContext } from 'koa';
import type { Logger } from '../../lib/log/logger.js';
import type { JsonSchema } from '../../lib/schemas/validator.js';
import type { ApiKeyDoc } from '../../store/api-keys.js';
import type { PageRequest } from '../../store/page.js';
import type { CursorKind } from './pagination.js';

/** What the middleware chain puts on `ctx.state` before a handler runs. */
export interface AppState {
  requestId: string;
  log: Logger;
  /** The authenticated key; set for every route with auth `api`. */
  auth?: { orgId: string; key: ApiKeyDoc };
  /** The validated JSON body, when the route declares one. */
  body?: unknown;
  /** Route template, for metrics and logs. */
  route?: string;
  /** The page asked for, on a route that declares `list` (requestedPage). */
  page?: PageRequest;
}

export type Ctx = ParameterizedContext<AppState> & { params: Record<string, string> };

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';

export interface JsonBody {
  schema: JsonSchema;
  /** An absent or empty body is treated as `{}`. */
  optional?: boolean;
}

/**
 * One endpoint: its wire contract and its handler. The same record mounts the
 * route, validates the request and documents it in /v1/openapi.json, so the
 * three cannot drift apart.
 */
export interface RouteSpec {
  method: HttpMethod;
  /** OpenAPI form, e.g. `/v1/agents/{agent_id}`. */
  path: string;
  summary: string;
  tag: string;
  /** `api` (default): a base-API key is required. `none`: public. `custom`: the handler authorises. */
  auth?: 'api' | 'none' | 'custom';
  body?: JsonBody;
  /** Documented request content type when the handler reads the body itself (uploads). */
  rawBody?: { contentType: string; description: string; schema?: JsonSchema };
  /** Query parameters besides a list's paging. */
  query?: JsonSchema;
  /**
   * A list endpoint and what its cursor (`after`) is: an id of this kind, a sequence number, a name's pattern (a
   * router id, a credential name), or `null` for a cursor of no fixed shape. The route table documents `limit` and `after` from this and
   * parses them into `ctx.state.page`, so the document and the check cannot drift apart.
   */
  list?: { cursor: CursorKind | null };
  /** Status of a successful response; 200 by default. */
  status?: number;
  /** Other success statuses, with the same body, and when each is answered (the synchronous wait's 202). */
  alsoSucceeds?: Record<number, string>;
  response?: JsonSchema;
  /** Other (or extra) media types of the success response, e.g. `text/event-stream` for the stream. */
  responseContent?: Record<string, JsonSchema>;
  /**
   * Error statuses this operation answers beyond those its auth, parameters and body imply (openapi.ts errorStatuses):
   * what its handler and what it calls throw, e.g. 409 from a state check, 422 from an Idempotency-Key.
   */
  errors?: number[];
  /** With auth `custom`: the security scheme the handler checks (documented in OpenAPI). */
  customAuth?: 'uploadToken';
  /** Returns the response body; returns undefined when it has set `ctx.body` itself. */
  handler(ctx: Ctx): Promise<unknown>;
}

export function requireAuth(ctx: Ctx): { orgId: string } {
  const auth = ctx.state.auth;
  if (!auth) throw new Error(`route ${ctx.state.route} used auth without the auth middleware`);
  return auth;
}
