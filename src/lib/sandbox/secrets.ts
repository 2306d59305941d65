import { SessionSecrets, type SecretSources } from '../crypto/session-secrets.js';
import type { SessionDoc } from '../../domain/views/session.js';

/**
 * The secrets a tool call gets: only the names the manifest declares in
 * `sandbox.secrets`, each resolved as SessionSecrets resolves a name (the
 * session's secret, else the org's stored credential), else absent.
 */
export async function sandboxSecrets(src: SecretSources, session: Pick<SessionDoc, '_id' | 'org_id' | 'secrets'>, declared: readonly string[]): Promise<Record<string, string>> {
  const secrets = new SessionSecrets(src, session);
  const out: Record<string, string> = {};
  for (const name of declared) {
    const value = await secrets.get(name);
    if (typeof value === 'string') out[name] = value;
  }
  return out;
}
