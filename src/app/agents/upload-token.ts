import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/** What an upload token grants: one snapshot of one org, until `exp` (epoch seconds). */
export interface UploadGrant {
  snapshotId: string;
  orgId: string;
  exp: number;
}

export type TokenCheck = { ok: true; grant: UploadGrant } | { ok: false; reason: 'malformed' | 'bad_signature' | 'expired' };

const LABEL = 'troupe/source-snapshot-upload-token/v1';

/**
 * Signs and checks the `X-Upload-Token` that authorises a snapshot upload in
 * place of the API key. The HMAC key is derived from a master key (so the
 * master key itself never signs anything) and the token names the key id, so
 * tokens issued before a key rotation stay valid until they expire.
 */
export class UploadTokens {
  private readonly keys = new Map<string, Buffer>();

  constructor(
    masterKeys: ReadonlyMap<string, Buffer>,
    private readonly currentId: string,
  ) {
    for (const [kid, key] of masterKeys) this.keys.set(kid, Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), LABEL, 32)));
  }

  sign(grant: UploadGrant): string {
    const payload = Buffer.from(JSON.stringify({ sid: grant.snapshotId, org: grant.orgId, exp: grant.exp })).toString('base64url');
    return `v1.${this.currentId}.${payload}.${this.mac(this.keys.get(this.currentId)!, this.currentId, payload)}`;
  }

  verify(token: string, nowSeconds: number): TokenCheck {
    const parts = token.split('.');
    if (parts.length !== 4 || parts[0] !== 'v1') return { ok: false, reason: 'malformed' };
    const [, kid, payload, mac] = parts;
    const key = this.keys.get(kid);
    if (!key) return { ok: false, reason: 'bad_signature' };
    const expected = Buffer.from(this.mac(key, kid, payload));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'bad_signature' };
    let body: { sid?: unknown; org?: unknown; exp?: unknown };
    try {
      body = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as typeof body;
    } catch {
      return { ok: false, reason: 'malformed' };
    }
    if (typeof body.sid !== 'string' || typeof body.org !== 'string' || typeof body.exp !== 'number') return { ok: false, reason: 'malformed' };
    if (body.exp <= nowSeconds) return { ok: false, reason: 'expired' };
    return { ok: true, grant: { snapshotId: body.sid, orgId: body.org, exp: body.exp } };
  }

  private mac(key: Buffer, kid: string, payload: string): string {
    return createHmac('sha256', key).update(`v1.${kid}.${payload}`).digest('base64url');
  }
}
