/** An encrypted value as stored: AES-256-GCM, with the id of the key that sealed it. */
export interface Sealed {
  kid: string;
  iv: string;
  tag: string;
  ct: string;
}

/**
 * What the stores need of the secret box (src/lib/crypto/secret-box.ts): seal and open values at rest, and keyed
 * digests of text that may hold secrets. Kept here so that the store depends on the shape, not on the cipher.
 */
export interface SecretSealer {
  seal(plaintext: string, aad?: string): Sealed;
  open(sealed: Sealed, aad?: string): string;
  digest(purpose: string, text: string): string;
  digestMatches(purpose: string, stored: string, text: string): boolean;
}
