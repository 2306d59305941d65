import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { SecretBox } from '../../src/lib/crypto/secret-box.js';

describe('SecretBox', () => {
  const k1 = randomBytes(32);
  const k2 = randomBytes(32);

  it('round-trips and never stores the plaintext', () => {
    const box = new SecretBox(new Map([['k1', k1]]), 'k1');
    const sealed = box.seal('sk-canary-123', 'aad');
    assert.ok(!JSON.stringify(sealed).includes('sk-canary-123'));
    assert.equal(box.open(sealed, 'aad'), 'sk-canary-123');
  });

  it('refuses tampered ciphertext or a different associated context', () => {
    const box = new SecretBox(new Map([['k1', k1]]), 'k1');
    const sealed = box.seal('value', 'org1');
    assert.throws(() => box.open(sealed, 'org2'));
    const ct = Buffer.from(sealed.ct, 'base64');
    ct[0] ^= 1;
    assert.throws(() => box.open({ ...sealed, ct: ct.toString('base64') }, 'org1'));
  });

  it('opens values sealed under an older key after rotation', () => {
    const old = new SecretBox(new Map([['k1', k1]]), 'k1');
    const sealed = old.seal('value');
    const rotated = new SecretBox(new Map([['k2', k2], ['k1', k1]]), 'k2');
    assert.equal(rotated.open(sealed), 'value');
    assert.equal(rotated.isStale(sealed), true);
    assert.equal(rotated.seal('x').kid, 'k2');
  });
});
