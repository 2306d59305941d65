import { ConflictError, InvalidRequestError, NotFoundError } from '../../../../domain/errors.js';
import { credentialView } from '../../../../domain/views/credential.js';
import type { AppDeps } from '../../deps.js';
import { pageOf, requestedPage } from '../../pagination.js';
import { requireAuth, type RouteSpec } from '../../types.js';
import { CREDENTIAL_NAME, credentialListResponse, credentialResponse, putCredentialBody } from './schema.js';

const NAME = new RegExp(CREDENTIAL_NAME);
/** Routers named in a credential_in_use refusal. */
const SHOWN_USERS = 3;

function nameParam(name: string): string {
  if (!NAME.test(name) || name.length > 128) {
    throw new InvalidRequestError(`Credential names match ${CREDENTIAL_NAME} (at most 128 characters).`, 'name', 'invalid_credential_name');
  }
  return name;
}

/** Org-level stored credentials (DESIGN §8): names are listed, values never leave. */
export function credentialRoutes({ stores }: AppDeps): RouteSpec[] {
  return [
    {
      method: 'PUT',
      path: '/v1/credentials/{name}',
      summary: 'Create or replace a stored credential.',
      tag: 'credentials',
      body: { schema: putCredentialBody },
      response: credentialResponse,
      handler: async (ctx) => {
        const { orgId } = requireAuth(ctx);
        const { value } = ctx.state.body as { value: string };
        return credentialView(await stores.credentials.put(orgId, nameParam(ctx.params.name), value));
      },
    },
    {
      method: 'GET',
      path: '/v1/credentials',
      summary: 'List stored credential names, in name order.',
      tag: 'credentials',
      list: { cursor: { pattern: CREDENTIAL_NAME, maxLength: 128, shape: 'a credential name' } },
      response: credentialListResponse,
      handler: async (ctx) => {
        const page = requestedPage(ctx);
        const { items, has_more, next_cursor } = pageOf(await stores.credentials.list(requireAuth(ctx).orgId, page), page.limit, (c) => c.name);
        return { credentials: items.map(credentialView), has_more, next_cursor };
      },
    },
    {
      method: 'DELETE',
      path: '/v1/credentials/{name}',
      summary: 'Delete a stored credential; 409 while a router\u2019s candidate names it.',
      errors: [409],
      tag: 'credentials',
      status: 204,
      handler: async (ctx) => {
        const { orgId } = requireAuth(ctx);
        const name = nameParam(ctx.params.name);
        // Like a storage binding in use: deleting it would turn the routers' calls into 502s, found only when routed.
        // One more than is shown: "…" only when there are more than those named.
        const users = await stores.routers.naming(orgId, name, SHOWN_USERS + 1);
        if (users.length > 0) {
          const more = users.length > SHOWN_USERS ? ', …' : '';
          throw new ConflictError(`Credential ${name} is named by routers (${users.slice(0, SHOWN_USERS).join(', ')}${more}); change or delete them first.`, 'credential_in_use');
        }
        if (!(await stores.credentials.delete(orgId, name))) throw new NotFoundError('credential', name);
        return undefined;
      },
    },
  ];
}
