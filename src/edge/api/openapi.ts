import { ErrorType } from '../../domain/errors.js';
import { budgetStandingSchema } from '../../domain/budget.js';
import type { JsonSchema } from '../../lib/schemas/validator.js';
import { querySchema } from './pagination.js';
import { webhooksSection, WEBHOOK_BODY_SCHEMAS } from './openapi-webhooks.js';
import { ASSISTANT_DELTA_SCHEMAS, LEDGER_EVENT_SCHEMAS } from './routes/sessions/ledger-events.js';
import type { RouteSpec } from './types.js';

export const ERROR_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['type', 'code', 'message'],
      properties: {
        type: { type: 'string', enum: [...new Set(Object.values(ErrorType))], description: 'Stable family of the status (README "Errors"); switch on code for the reason.' },
        code: { type: 'string', description: 'Machine-readable reason, e.g. malformed_json.' },
        message: { type: 'string' },
        param: { type: 'string', description: 'The offending field, in a.b[0].c form.' },
        budget: { ...budgetStandingSchema, description: 'On 402 budget_exceeded: the budget that refused, what its period has spent and when it resets (null: a total budget).' },
      },
    },
  },
};

const ERROR_REF = { $ref: '#/components/schemas/Error' };

/** What each error status means on this API (README "Errors"). */
export const ERROR_STATUS: Record<number, string> = {
  400: 'Invalid input or malformed JSON.',
  401: 'Missing or invalid API key.',
  402: 'A spend budget is used up (budget_exceeded): `error.budget` names it and when it resets.',
  403: 'A key of the wrong kind.',
  404: 'No such resource (including one of another organization).',
  408: 'The request body stopped arriving.',
  409: 'Conflict with the current state.',
  413: 'Request too large.',
  415: 'Wrong Content-Type.',
  422: 'Well-formed but unprocessable.',
  429: 'Rate limited: see Retry-After and the RateLimit-* headers.',
  503: 'Not ready, shutting down, or a data store or session briefly unreachable: retry (with the same Idempotency-Key, if any).',
};

const RATE_HEADERS = {
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
  'RateLimit-Limit': { description: 'Requests allowed in the window; on a concurrency_limited 429, the sessions that may run at once (RateLimit-Policy says which).', schema: { type: 'integer' } },
  'RateLimit-Remaining': { description: 'Requests left in the window.', schema: { type: 'integer' } },
  'RateLimit-Reset': { description: 'Seconds until the window resets.', schema: { type: 'integer' } },
};

const TAGS: Record<string, string> = {
  agents: 'Agents and their versions, created from source snapshots.',
  credentials: 'Encrypted provider keys and secrets of the organization; values are never returned.',
  events: 'The session ledger: append, read, and stream it.',
  schedules: 'Cron schedules: each tick opens a session from a template and sends it a message.',
  files: 'Files to attach to messages.',
  messages: 'User messages and their results: records, the synchronous wait, the transcript.',
  organization: 'Settings of the calling organization.',
  routers: 'Model routers behind the routing interface.',
  'session-batches': 'Many sessions, each with its first message, in one request.',
  sessions: 'Durable conversations with an agent.',
  'source-snapshots': 'Agent source archives: reserve, upload, finalize.',
  'storage-bindings': 'Named file areas mounted into a session\u2019s custom tools.',
  system: 'Liveness, readiness, metrics and this document.',
  usage: 'Token usage and cost.',
  webhooks: 'Webhook configuration and the delivery log.',
};

/**
 * Error statuses an operation can answer: those its auth, path ids, query and body imply, and the route's own
 * `errors`. An authenticated request reads the store, which can be briefly unreachable (503). The integration
 * suite checks every status a route answered against this (test/support/api-statuses.ts).
 */
export function errorStatuses(s: RouteSpec): number[] {
  const out = new Set<number>(s.errors ?? []);
  const auth = s.auth ?? 'api';
  if (auth !== 'none') [401, 503].forEach((c) => out.add(c));
  if (auth === 'api') [403, 429].forEach((c) => out.add(c));
  if (/\{/.test(s.path)) out.add(404);
  if (s.query || s.list || s.body || s.rawBody || /\{/.test(s.path)) out.add(400);
  if (s.body || s.rawBody) [408, 413, 415].forEach((c) => out.add(c));
  return [...out].sort();
}

export function errorResponses(statuses: number[], envelope: JsonSchema = ERROR_REF): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const c of statuses) out[String(c)] = { description: ERROR_STATUS[c] ?? 'Error.', ...(c === 429 ? { headers: RATE_HEADERS } : {}), content: { 'application/json': { schema: envelope } } };
  out.default = { description: 'Unexpected error; quote the X-Request-Id when reporting it.', content: { 'application/json': { schema: envelope } } };
  return out;
}

function successResponse(s: RouteSpec): Record<string, unknown> {
  const ok = String(s.status ?? 200);
  if (ok === '204') return { [ok]: { description: 'No content.' } };
  const content: Record<string, { schema: JsonSchema }> = {};
  if (s.response || !s.responseContent) content['application/json'] = { schema: s.response ?? { type: 'object' } };
  for (const [type, schema] of Object.entries(s.responseContent ?? {})) content[type] = { schema };
  const out: Record<string, unknown> = { [ok]: { description: 'Success.', content } };
  for (const [status, description] of Object.entries(s.alsoSucceeds ?? {})) out[status] = { description, content };
  return out;
}

function operationId(s: RouteSpec): string {
  return `${s.method.toLowerCase()}${s.path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ? c.toUpperCase() : ''))}`;
}

function security(s: RouteSpec): Record<string, string[]>[] {
  const auth = s.auth ?? 'api';
  if (auth === 'api') return [{ bearer: [] }];
  if (auth === 'custom') {
    if (!s.customAuth) throw new Error(`route ${s.method} ${s.path} has custom auth but names no scheme`);
    return [{ [s.customAuth]: [] }];
  }
  // Declared open: an empty list, so a reader sees it is public on purpose.
  return [];
}

/** Builds the OpenAPI 3.1 document from the same route specs and schemas that serve requests. */
export function buildOpenApi(specs: RouteSpec[], serverUrl: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const s of specs) {
    const op: Record<string, unknown> = { summary: s.summary, tags: [s.tag], operationId: operationId(s) };
    const params = [...s.path.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    const query = (querySchema(s)?.properties ?? {}) as Record<string, unknown>;
    for (const [name, schema] of Object.entries(query)) params.push({ name, in: 'query', required: false, schema: schema as { type: string } });
    if (params.length) op.parameters = params;
    if (s.body) op.requestBody = { required: !s.body.optional, content: { 'application/json': { schema: s.body.schema } } };
    if (s.rawBody) op.requestBody = { required: true, description: s.rawBody.description, content: { [s.rawBody.contentType]: { schema: s.rawBody.schema ?? {} } } };
    op.responses = { ...successResponse(s), ...errorResponses(errorStatuses(s)) };
    op.security = security(s);
    (paths[s.path] ??= {})[s.method.toLowerCase()] = op;
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Troupe API', version: 'v1', description: 'Troupe hosts agents and runs conversations with them.', license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' } },
    servers: [{ url: serverUrl }],
    tags: [...new Set(specs.map((s) => s.tag))].sort().map((name) => ({ name, description: TAGS[name] ?? name })),
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'An API key: Authorization: Bearer tr_sk_...' },
        uploadToken: { type: 'apiKey', in: 'header', name: 'X-Upload-Token', description: 'The one-time token from a source snapshot reservation.' },
      },
      schemas: { Error: ERROR_SCHEMA, ...LEDGER_EVENT_SCHEMAS, ...ASSISTANT_DELTA_SCHEMAS, ...WEBHOOK_BODY_SCHEMAS },
    },
    paths,
    webhooks: webhooksSection(),
  };
}
