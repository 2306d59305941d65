import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { SecretBox } from '../../src/lib/crypto/secret-box.js';
import { llmKeyAad, secretsAad, SessionSecrets, sessionLlmKey } from '../../src/lib/crypto/session-secrets.js';
import { sandboxSecrets } from '../../src/lib/sandbox/secrets.js';

/** One resolution of a session's secrets, for tool calls (sandboxSecrets) and model calls (the provider key) alike. */
describe('session secrets', () => {
  const box = new SecretBox(new Map([['k1', randomBytes(32)]]), 'k1');
  const stored: Record<string, string> = { DB_PASSWORD: 'org-db', OPENAI_API_KEY: 'org-key' };
  const revealed: string[] = [];
  const src = {
    box,
    reveal: async (orgId: string, name: string) => {
      revealed.push(`${orgId}/${name}`);
      return orgId === 'org_a' ? (stored[name] ?? null) : null;
    },
  };
  const session = (id: string, secrets: Record<string, string> | null) => ({ _id: id, org_id: 'org_a', secrets: secrets ? box.seal(JSON.stringify(secrets), secretsAad(id)) : null });
  beforeEach(() => (revealed.length = 0));

  it("takes the session's own secret first, else the org's stored credential of that name, else none", async () => {
    const s = new SessionSecrets(src, session('ses_1', { OPENAI_API_KEY: 'session-key' }));
    assert.equal(await s.get('OPENAI_API_KEY'), 'session-key');
    assert.deepEqual(revealed, [], 'a session secret is not looked up in the org');
    assert.equal(await s.get('DB_PASSWORD'), 'org-db');
    assert.equal(await s.get('MISSING'), null);
    assert.deepEqual(s.ownValues(), ['session-key']);
    assert.deepEqual(new SessionSecrets(src, session('ses_2', null)).ownValues(), []);
  });

  it('gives a tool call only the declared names, resolved the same way', async () => {
    const out = await sandboxSecrets(src, session('ses_3', { API_TOKEN: 't', OPENAI_API_KEY: 'session-key' }), ['API_TOKEN', 'DB_PASSWORD', 'MISSING']);
    assert.deepEqual(out, { API_TOKEN: 't', DB_PASSWORD: 'org-db' });
  });

  it("does not open secrets sealed for another session: they are bound to the session's id", () => {
    const theirs = session('ses_other', { API_TOKEN: 't' });
    assert.throws(() => new SessionSecrets(src, { ...theirs, _id: 'ses_mine' }));
    const key = box.seal('sk-session', llmKeyAad('ses_other'));
    assert.equal(sessionLlmKey(box, { _id: 'ses_other', llm_api_key: key }), 'sk-session');
    assert.throws(() => sessionLlmKey(box, { _id: 'ses_mine', llm_api_key: key }));
    assert.equal(sessionLlmKey(box, { _id: 'ses_mine', llm_api_key: null }), null);
  });
});
