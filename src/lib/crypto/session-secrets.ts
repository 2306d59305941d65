import type { SessionDoc } from '../../domain/views/session.js';
import type { SecretBox } from './secret-box.js';

/** What a session's sealed secrets are bound to, so a sealed value copied onto another session does not open. */
export function secretsAad(sessionId: string): string {
  return `session-secrets:${sessionId}`;
}

/** What a session's sealed provider key (`llm_api_key`) is bound to. */
export function llmKeyAad(sessionId: string): string {
  return `session-llm-key:${sessionId}`;
}

export interface SecretSources {
  box: SecretBox;
  /** A stored credential of the org by name; null when there is none. */
  reveal(orgId: string, name: string): Promise<string | null>;
}

/**
 * The secrets a session can name, resolved one way for tool calls (src/lib/sandbox/secrets.ts) and model calls
 * (actors/router-proxy/providers.ts): a name is the session's own secret of that name, else the org's stored
 * credential of that name, else absent. The session's own are opened once, when this is built.
 */
export class SessionSecrets {
  private readonly own: Record<string, string>;

  constructor(
    private readonly src: SecretSources,
    private readonly session: Pick<SessionDoc, '_id' | 'org_id' | 'secrets'>,
  ) {
    this.own = session.secrets ? (JSON.parse(src.box.open(session.secrets, secretsAad(session._id))) as Record<string, string>) : {};
  }

  /** The session's own values: what a provider must never get to echo back into Troupe. */
  ownValues(): string[] {
    return Object.values(this.own);
  }

  async get(name: string): Promise<string | null> {
    return Object.hasOwn(this.own, name) ? this.own[name] : this.src.reveal(this.session.org_id, name);
  }
}

/** The session's own provider key, opened; null when it was created without one. */
export function sessionLlmKey(box: SecretBox, session: Pick<SessionDoc, '_id' | 'llm_api_key'>): string | null {
  return session.llm_api_key ? box.open(session.llm_api_key, llmKeyAad(session._id)) : null;
}
