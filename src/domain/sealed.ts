/** An encrypted value as stored: AES-256-GCM, with the id of the key that sealed it (src/lib/crypto/secret-box.ts). */
export interface Sealed {
  kid: string;
  iv: string;
  tag: string;
  ct: string;
}
