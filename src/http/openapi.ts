import type { RouteSpec } from './types.js';

const ERROR_SCHEMA = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['type', 'code', 'message'],
      properties: { type: { type: 'string' }, code: { type: 'string' }, message: { type: 'string' }, param: { type: 'string' } },
    },
  },
};

/** Builds the OpenAPI 3.1 document from the same route specs and schemas that serve requests. */
export function buildOpenApi(specs: RouteSpec[], serverUrl: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const s of specs) {
    const op: Record<string, unknown> = { summary: s.summary, tags: [s.tag], operationId: `${s.method.toLowerCase()}${s.path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ? c.toUpperCase() : ''))}` };
    const params = [...s.path.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    const query = (s.query?.properties ?? {}) as Record<string, unknown>;
    for (const [name, schema] of Object.entries(query)) params.push({ name, in: 'query', required: false, schema: schema as { type: string } });
    if (params.length) op.parameters = params;
    if (s.body) op.requestBody = { required: !s.body.optional, content: { 'application/json': { schema: s.body.schema } } };
    if (s.rawBody) op.requestBody = { required: true, description: s.rawBody.description, content: { [s.rawBody.contentType]: { schema: s.rawBody.schema ?? {} } } };
    const ok = String(s.status ?? 200);
    op.responses = {
      [ok]: ok === '204' ? { description: 'No content' } : { description: 'Success', content: { [s.responseType ?? 'application/json']: { schema: s.response ?? (s.responseType ? { type: 'string' } : { type: 'object' }) } } },
      default: { description: 'Error', content: { 'application/json': { schema: ERROR_SCHEMA } } },
    };
    if ((s.auth ?? 'api') === 'api') op.security = [{ bearer: [] }];
    (paths[s.path] ??= {})[s.method.toLowerCase()] = op;
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Troupe API', version: 'v1', description: 'Troupe hosts agents and runs conversations with them.' },
    servers: [{ url: serverUrl }],
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } }, schemas: { Error: ERROR_SCHEMA } },
    paths,
  };
}
