import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { openApiDocument } from './generate.js';
import { buildRoutingOpenApi } from '../../../src/edge/router/openapi.js';

/**
 * Where redocly.yaml's `apis` find the two OpenAPI documents. They are built from the route table, not kept as
 * files, so `npm run lint:openapi` and the lint unit test write them here first (gitignored).
 */
export const OPENAPI_DIR = resolve(__dirname, '../../../../.openapi');

/**
 * The base API's and the routing interface's documents as served, with public server URLs (a localhost server is a
 * lint warning, and deployments have their own).
 */
export function openApiDocuments(): { api: Record<string, unknown>; routing: Record<string, unknown> } {
  return { api: { ...openApiDocument(), servers: [{ url: 'https://api.troupe.test' }] }, routing: buildRoutingOpenApi('https://routing.troupe.test') };
}

/** Writes both documents into `dir` as api.json and routing.json, the names redocly.yaml gives. */
export function writeOpenApiDocuments(dir: string = OPENAPI_DIR): void {
  const { api, routing } = openApiDocuments();
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'api.json'), JSON.stringify(api, null, 2));
  writeFileSync(join(dir, 'routing.json'), JSON.stringify(routing, null, 2));
}

if (require.main === module) writeOpenApiDocuments();
