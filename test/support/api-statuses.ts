import { subscribe } from 'node:diagnostics_channel';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { openApiDocument } from '../../clients/typescript/codegen/generate.js';

/**
 * Mocha root hook for the integration configs: every status a base API server of this process answered during
 * the run must be declared for its operation in /v1/openapi.json (5xx other than 503 excepted: the document's
 * `default` response stands for an unexpected error). A route that starts answering a new status without
 * declaring it fails the run here, naming the operation and the status, so the document cannot drift from the
 * service.
 *
 * Node publishes every finished response of every HTTP server on a diagnostics channel; the harness names the
 * ports that serve the base API (observeBaseApi), so the router, fake upstreams and webhook receivers are left out.
 */
const basePorts = new Set<number>();
/** `METHOD path status` → how often, for responses of a base API server. */
const seen = new Map<string, number>();

/** What the run has seen so far (`METHOD path status` → count). */
export function observedStatuses(): ReadonlyMap<string, number> {
  return seen;
}

export function observeBaseApi(port: number): () => void {
  basePorts.add(port);
  return () => basePorts.delete(port);
}

subscribe('http.server.response.finish', (message) => {
  const { request, response, server } = message as { request: IncomingMessage; response: ServerResponse; server: Server };
  const address = server.address();
  if (!address || typeof address === 'string' || !basePorts.has(address.port)) return;
  const path = (request.url ?? '/').split('?')[0];
  const key = `${request.method} ${path} ${response.statusCode}`;
  seen.set(key, (seen.get(key) ?? 0) + 1);
});

type Responses = Record<string, unknown>;
export type ApiDocument = { paths: Record<string, Record<string, { responses: Responses }>> };

/** The document's operations as matchers: `GET /v1/agents/{agent_id}` matches `GET /v1/agents/agt_…`. */
function operations(doc: ApiDocument): { method: string; template: string; pattern: RegExp; responses: Responses }[] {
  return Object.entries(doc.paths).flatMap(([template, ops]) =>
    Object.entries(ops).map(([method, op]) => ({
      method: method.toUpperCase(),
      template,
      pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[A-Za-z0-9_]+\}/g, '[^/]+')}$`),
      responses: op.responses,
    })),
  );
}

/**
 * Observed responses (`METHOD path status` → count) the document does not declare for their operation, e.g.
 * `POST /v1/session-batches 404 (2×)`.
 */
export function undeclaredStatuses(doc: ApiDocument = openApiDocument() as ApiDocument, observed: ReadonlyMap<string, number> = seen): string[] {
  const ops = operations(doc);
  const missing = new Map<string, number>();
  for (const [key, count] of observed) {
    const [method, path, status] = key.split(' ');
    // Exact paths first: /v1/sessions/{session_id}/messages/sync before …/messages/{message_id}.
    const matches = ops.filter((o) => o.method === method && o.pattern.test(path)).sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0));
    const op = matches[0];
    // No such operation: a 404/405 for an unknown route, or the console's pages; not the document's to declare.
    if (!op) continue;
    if (Number(status) >= 500 && status !== '503') continue;
    if (op.responses[status]) continue;
    const name = `${method} ${op.template} ${status}`;
    missing.set(name, (missing.get(name) ?? 0) + count);
  }
  return [...missing].map(([name, n]) => `${name} (${n}×)`).sort();
}

export const mochaHooks = {
  afterAll() {
    const missing = undeclaredStatuses();
    if (missing.length) throw new Error(`the base API answered statuses /v1/openapi.json does not declare for the operation:\n  ${missing.join('\n  ')}`);
  },
};
