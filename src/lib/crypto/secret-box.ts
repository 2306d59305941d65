import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Sealed, SecretSealer } from '../../domain/sealed.js';

/**
 * Seals and opens secrets at rest. New values use the current key; any key
 * still listed in TROUPE_MASTER_KEY opens old ones, which is what lets keys
 * rotate without a migration.
 */
export class SecretBox implements SecretSealer {
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

  /**
   * A keyed digest of `text` (HMAC-SHA256 under a subkey of the current master key for `purpose`), as
   * `<key id>:<hex>`: for a value that must be compared later but never read back, taken of text that may hold
   * secrets. A plain hash of such text would let whoever reads the database test guesses of a weak secret offline.
   */
  digest(purpose: string, text: string): string {
    return `${this.currentId}:${this.mac(this.currentId, purpose, text)!.toString('hex')}`;
  }

  /** Whether `stored` (a `digest` of `purpose`) is of `text`; false when its key is no longer configured. */
  digestMatches(purpose: string, stored: string, text: string): boolean {
    const at = stored.indexOf(':');
    const mac = at > 0 ? this.mac(stored.slice(0, at), purpose, text) : null;
    const hex = stored.slice(at + 1);
    return mac !== null && hex.length === mac.length * 2 && timingSafeEqual(mac, Buffer.from(hex, 'hex'));
  }

  private readonly subkeys = new Map<string, Buffer>();

  /** The MAC under key `kid`'s subkey for `purpose` (derived once: one master key never keys two uses alike). */
  private mac(kid: string, purpose: string, text: string): Buffer | null {
    const id = `${kid}\0${purpose}`;
    let sub = this.subkeys.get(id);
    if (!sub) {
      const key = this.keys.get(kid);
      if (!key) return null;
      sub = createHmac('sha256', key).update(`troupe digest ${purpose}`).digest();
      this.subkeys.set(id, sub);
    }
    return createHmac('sha256', sub).update(text, 'utf8').digest();
  }
}
