import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** An encrypted value as stored: AES-256-GCM, with the id of the key that sealed it. */
export interface Sealed {
  kid: string;
  iv: string;
  tag: string;
  ct: string;
}

/**
 * Seals and opens secrets at rest. New values use the current key; any key
 * still listed in TROUPE_MASTER_KEY opens old ones, which is what lets keys
 * rotate without a migration.
 */
export class SecretBox {
  constructor(
    private readonly keys: ReadonlyMap<string, Buffer>,
    private readonly currentId: string,
  ) {
    if (!keys.has(currentId)) throw new Error(`master key ${currentId} missing`);
  }

  seal(plaintext: string, aad = ''): Sealed {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.currentId)!, iv);
    cipher.setAAD(Buffer.from(aad));
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return { kid: this.currentId, iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), ct: ct.toString('base64') };
  }

  open(sealed: Sealed, aad = ''): string {
    const key = this.keys.get(sealed.kid);
    if (!key) throw new Error(`master key ${sealed.kid} is no longer configured`);
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64'));
    decipher.setAAD(Buffer.from(aad));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(sealed.ct, 'base64')), decipher.final()]).toString('utf8');
  }

  /** True when a value was sealed under an older key and should be re-sealed. */
  isStale(sealed: Sealed): boolean {
    return sealed.kid !== this.currentId;
  }
}
