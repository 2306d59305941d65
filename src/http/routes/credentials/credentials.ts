import { InvalidRequestError, NotFoundError } from '../../../domain/errors.js';
import { credentialView } from '../../../store/credentials.js';
import type { AppDeps } from '../../deps.js';
import { requireAuth, type RouteSpec } from '../../types.js';
import { CREDENTIAL_NAME, credentialListResponse, credentialResponse, putCredentialBody } from './schema.js';

const NAME = new RegExp(CREDENTIAL_NAME);

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
      summary: 'List stored credential names.',
      tag: 'credentials',
      response: credentialListResponse,
      handler: async (ctx) => ({ credentials: (await stores.credentials.list(requireAuth(ctx).orgId)).map(credentialView) }),
    },
    {
      method: 'DELETE',
      path: '/v1/credentials/{name}',
      summary: 'Delete a stored credential.',
      tag: 'credentials',
      status: 204,
      handler: async (ctx) => {
        const name = nameParam(ctx.params.name);
        if (!(await stores.credentials.delete(requireAuth(ctx).orgId, name))) throw new NotFoundError('credential', name);
        return undefined;
      },
    },
  ];
}
