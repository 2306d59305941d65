import type { IncomingMessage } from 'node:http';
import { AuthenticationError } from '../../domain/errors.js';
import { clientAddress } from '../api/client-address.js';
import type { KeyAuthenticator } from '../api/middleware/auth.js';
import type { ApiKeyDoc } from '../../store/api-keys.js';

/**
 * The routing key of a request. Bearer works everywhere; Anthropic's SDK and
 * tools send `x-api-key`, so the Messages paths (and the models list, which
 * that SDK also calls) take it too. When both are sent, Authorization wins.
 */
export function authenticateRouting(req: IncomingMessage, auth: KeyAuthenticator, acceptXApiKey: boolean): Promise<{ orgId: string; key: ApiKeyDoc }> {
  const headers = req.headers;
  const header = headers.authorization;
  const address = clientAddress(req);
  if (header || !acceptXApiKey) return auth.authenticate(header || undefined, 'routing', address);
  const key = String(headers['x-api-key'] ?? '').trim();
  if (!key) throw new AuthenticationError('Missing routing key. Send it as "x-api-key: <key>" or "Authorization: Bearer <key>".', 'missing_api_key');
  return auth.authenticateKey(key, 'routing', address);
}
