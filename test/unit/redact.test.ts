import assert from 'node:assert/strict';
import { REDACTED, Redactor } from '../../src/domain/redact.js';

describe('secret redaction', () => {
  const key = 'sk-live-0123456789';
  const quoted = 'pa"ss\\word';
  const r = new Redactor([key, quoted, 'abc', null, undefined]);

  it('removes a secret as is, JSON-escaped and percent-encoded', () => {
    assert.equal(r.redact(`Incorrect API key provided: ${key}.`), `Incorrect API key provided: ${REDACTED}.`);
    assert.equal(r.redact(JSON.stringify({ m: quoted })), `{"m":"${REDACTED}"}`);
    assert.equal(r.redact(`?k=${encodeURIComponent(quoted)}`), `?k=${REDACTED}`);
  });

  it('leaves values too short to be secrets alone, so ordinary text survives', () => {
    assert.equal(r.redact('abc abc'), 'abc abc');
    assert.equal(new Redactor([]).empty, true);
  });

  it('catches a secret split across any pieces of a stream, and passes everything else on', () => {
    const text = `before ${key} middle ${key}${key} after`;
    for (let size = 1; size <= text.length; size += 3) {
      const s = r.stream();
      let out = '';
      for (let i = 0; i < text.length; i += size) out += s.push(text.slice(i, i + size));
      out += s.flush();
      assert.equal(out, `before ${REDACTED} middle ${REDACTED}${REDACTED} after`, `pieces of ${size}`);
    }
  });

  it('holds back no more than could still start a secret', () => {
    const s = r.stream();
    assert.equal(s.push('x'.repeat(40)), 'x'.repeat(40 - (key.length - 1)));
    assert.equal(s.flush(), 'x'.repeat(key.length - 1));
  });
});
