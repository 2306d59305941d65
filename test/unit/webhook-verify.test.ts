import assert from 'node:assert/strict';
import { signatureHeader, signWebhook } from '../../src/lib/webhooks/signature.js';
import { isValidWebhook, verifyWebhook, WebhookVerificationError } from '../../src/lib/webhooks/verify.js';

const SECRET = 'whsec_current_secret_for_tests';
const OLD = 'whsec_previous_secret_for_tests';
const NOW = 1_750_000_000_000;
const TS = String(NOW / 1000);
const BODY = '{"id":"ses_1:msg_1:call_1","type":"tool.call_requested","arguments":{"q":"x"}}';

function headers(sig: string, ts = TS): Record<string, string> {
  return { 'service-webhook-id': 'ses_1:msg_1:call_1', 'service-webhook-timestamp': ts, 'service-webhook-signature': sig };
}

function reason(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof WebhookVerificationError);
    return err.reason;
  }
  assert.fail('expected verification to fail');
}

describe('webhook signature verification', () => {
  it('signs <timestamp>.<raw body> with HMAC-SHA256, hex', () => {
    // Computed independently: printf '%s' '1750000000.{}' | openssl dgst -sha256 -hmac k
    assert.equal(signWebhook('k', 1750000000, '{}'), 'ba5a977dde014d9c19d33c8080eb138a3ec435d0b612fdeacddff496c57ac0af');
    assert.equal(signWebhook('k', '1750000000', Buffer.from('{}')), 'ba5a977dde014d9c19d33c8080eb138a3ec435d0b612fdeacddff496c57ac0af');
    assert.match(signWebhook('k', 1, '{}'), /^[0-9a-f]{64}$/);
    assert.equal(signatureHeader(['a', 'b'], 1, '{}'), `v1=${signWebhook('a', 1, '{}')} v1=${signWebhook('b', 1, '{}')}`);
  });

  it('accepts a good signature and returns the webhook id', () => {
    const out = verifyWebhook({ secret: SECRET, headers: headers(signatureHeader([SECRET], TS, BODY)), rawBody: BODY, now: NOW });
    assert.deepEqual(out, { id: 'ses_1:msg_1:call_1', timestamp: NOW / 1000 });
    assert.equal(isValidWebhook({ secret: SECRET, headers: headers(signatureHeader([SECRET], TS, BODY)), rawBody: Buffer.from(BODY), now: NOW }), true);
  });

  it("returns the signed body's id, not the unsigned Service-Webhook-Id header (a replay with another header id is the same event)", () => {
    const sig = signatureHeader([SECRET], TS, BODY);
    const replayed = { ...headers(sig), 'service-webhook-id': 'ses_1:msg_1:call_FRESH' };
    assert.equal(verifyWebhook({ secret: SECRET, headers: replayed, rawBody: BODY, now: NOW }).id, 'ses_1:msg_1:call_1');
    const { 'service-webhook-id': _dropped, ...noId } = headers(sig);
    assert.equal(verifyWebhook({ secret: SECRET, headers: noId, rawBody: Buffer.from(BODY), now: NOW }).id, 'ses_1:msg_1:call_1');
  });

  it('reads Fetch Headers and mixed-case header maps', () => {
    const sig = signatureHeader([SECRET], TS, BODY);
    const h = new Headers(headers(sig));
    assert.equal(isValidWebhook({ secret: SECRET, headers: h, rawBody: BODY, now: NOW }), true);
    assert.equal(isValidWebhook({ secret: SECRET, headers: { 'Service-Webhook-Timestamp': TS, 'Service-Webhook-Signature': sig }, rawBody: BODY, now: NOW }), true);
  });

  it('rejects a tampered body, a wrong secret and a tampered timestamp', () => {
    const sig = signatureHeader([SECRET], TS, BODY);
    assert.equal(reason(() => verifyWebhook({ secret: SECRET, headers: headers(sig), rawBody: BODY.replace('"x"', '"y"'), now: NOW })), 'invalid_signature');
    assert.equal(reason(() => verifyWebhook({ secret: 'whsec_other', headers: headers(sig), rawBody: BODY, now: NOW })), 'invalid_signature');
    assert.equal(reason(() => verifyWebhook({ secret: SECRET, headers: headers(sig, String(Number(TS) + 1)), rawBody: BODY, now: NOW })), 'invalid_signature');
    // Re-serialised JSON (different whitespace) is not the raw body.
    assert.equal(isValidWebhook({ secret: SECRET, headers: headers(sig), rawBody: JSON.stringify(JSON.parse(BODY), null, 1), now: NOW }), false);
  });

  it('rejects an old or far-future timestamp, with a 300 s default tolerance', () => {
    const oldTs = String(NOW / 1000 - 301);
    const old = signatureHeader([SECRET], oldTs, BODY);
    assert.equal(reason(() => verifyWebhook({ secret: SECRET, headers: headers(old, oldTs), rawBody: BODY, now: NOW })), 'timestamp_out_of_tolerance');
    const edgeTs = String(NOW / 1000 - 300);
    assert.equal(isValidWebhook({ secret: SECRET, headers: headers(signatureHeader([SECRET], edgeTs, BODY), edgeTs), rawBody: BODY, now: NOW }), true);
    const futureTs = String(NOW / 1000 + 600);
    assert.equal(reason(() => verifyWebhook({ secret: SECRET, headers: headers(signatureHeader([SECRET], futureTs, BODY), futureTs), rawBody: BODY, now: NOW })), 'timestamp_out_of_tolerance');
    assert.equal(isValidWebhook({ secret: SECRET, headers: headers(old, oldTs), rawBody: BODY, now: NOW, toleranceSeconds: 600 }), true);
  });

  it('accepts either signature during a rotation, with either secret', () => {
    const both = signatureHeader([SECRET, OLD], TS, BODY);
    assert.equal(both.split(' ').length, 2);
    assert.equal(isValidWebhook({ secret: SECRET, headers: headers(both), rawBody: BODY, now: NOW }), true, 'receiver already on the new secret');
    assert.equal(isValidWebhook({ secret: OLD, headers: headers(both), rawBody: BODY, now: NOW }), true, 'receiver still on the old secret');
    assert.equal(isValidWebhook({ secret: [OLD, SECRET], headers: headers(signatureHeader([SECRET], TS, BODY)), rawBody: BODY, now: NOW }), true, 'receiver holding both');
    assert.equal(isValidWebhook({ secret: 'whsec_neither', headers: headers(both), rawBody: BODY, now: NOW }), false);
  });

  it('rejects missing headers, non-numeric timestamps and malformed signatures', () => {
    assert.equal(reason(() => verifyWebhook({ secret: SECRET, headers: {}, rawBody: BODY, now: NOW })), 'missing_header');
    assert.equal(reason(() => verifyWebhook({ secret: SECRET, headers: headers('v1=00', 'yesterday'), rawBody: BODY, now: NOW })), 'invalid_timestamp');
    assert.equal(reason(() => verifyWebhook({ secret: SECRET, headers: headers('v1=zz'), rawBody: BODY, now: NOW })), 'invalid_signature');
    const bare = signWebhook(SECRET, TS, BODY);
    assert.equal(reason(() => verifyWebhook({ secret: SECRET, headers: headers(bare), rawBody: BODY, now: NOW })), 'invalid_signature', 'the v1= prefix is required');
    assert.equal(reason(() => verifyWebhook({ secret: SECRET, headers: headers(`v0=${bare}`), rawBody: BODY, now: NOW })), 'invalid_signature');
  });
});
