import { AuthenticationError } from '../domain/errors.js';
import type { KeyAuthenticator } from '../http/middleware/auth.js';
import type { Ctx } from '../http/types.js';
import type { ApiKeyDoc } from '../store/api-keys.js';

/**
 * The routing key of a request. Bearer works everywhere; Anthropic's SDK and
 * tools send `x-api-key`, so the Messages paths (and the models list, which
 * that SDK also calls) take it too. When both are sent, Authorization wins.
 */
export function authenticateRouting(ctx: Ctx, auth: KeyAuthenticator, acceptXApiKey: boolean): Promise<{ orgId: string; key: ApiKeyDoc }> {
  const header = ctx.get('Authorization');
  if (header || !acceptXApiKey) return auth.authenticate(header || undefined, 'routing');
  const key = ctx.get('x-api-key').trim();
  if (!key) throw new AuthenticationError('Missing routing key. Send it as "x-api-key: <key>" or "Authorization: Bearer <key>".', 'missing_api_key');
  return auth.authenticateKey(key, 'routing');
}
