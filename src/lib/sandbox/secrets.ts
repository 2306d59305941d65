import type { SecretBox } from '../crypto/secret-box.js';
import { secretsAad } from '../../app/sessions/create-session.js';
import type { SessionDoc } from '../../domain/views/session.js';

export interface SecretSources {
  box: SecretBox;
  /** A stored credential of the org by name; null when there is none. */
  reveal(orgId: string, name: string): Promise<string | null>;
}

/**
 * The secrets a tool call gets: only the names the manifest declares in
 * `sandbox.secrets`, each from the session's secrets, else the org's stored
 * credential of that name, else absent.
 */
export async function sandboxSecrets(src: SecretSources, session: Pick<SessionDoc, '_id' | 'org_id' | 'secrets'>, declared: readonly string[]): Promise<Record<string, string>> {
  const own = session.secrets ? (JSON.parse(src.box.open(session.secrets, secretsAad(session._id))) as Record<string, string>) : {};
  const out: Record<string, string> = {};
  for (const name of declared) {
    const value = Object.hasOwn(own, name) ? own[name] : await src.reveal(session.org_id, name);
    if (typeof value === 'string') out[name] = value;
  }
  return out;
}
