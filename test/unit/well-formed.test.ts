import assert from 'node:assert/strict';
import { mayHoldLoneSurrogate, parseWellFormed, wellFormed, wellFormedJson } from '../../src/domain/well-formed.js';

describe('well-formed text (lone surrogates become U+FFFD)', () => {
  it('writes JSON text with no lone surrogate escape, in strings and keys, at any depth', () => {
    const value = { a: ['x\ud800y', { ['k\udc00']: 'v\udbff' }], when: new Date(0), pair: '\ud83d\ude00', plain: 'ok' };
    const text = wellFormedJson(value);
    assert.doesNotMatch(text, /\\u[dD][89a-fA-F]/);
    assert.deepEqual(JSON.parse(text), { a: ['x\ufffdy', { 'k\ufffd': 'v\ufffd' }], when: '1970-01-01T00:00:00.000Z', pair: '\ud83d\ude00', plain: 'ok' });
  });

  it('leaves well-formed text as JSON.stringify writes it, a backslash followed by "ud" included', () => {
    for (const v of [{ t: 'a \\ud800 literal' }, ['\ud83d\ude00'], 'plain', 42, null]) assert.equal(wellFormedJson(v), JSON.stringify(v));
    assert.equal(wellFormedJson(undefined), undefined);
  });

  it('spots surrogate escapes in a body, either case, and fixes the parsed value', () => {
    assert.equal(mayHoldLoneSurrogate('{"a":"\\uD800"}'), true);
    assert.equal(mayHoldLoneSurrogate('{"a":"\\ud7ff \\u00e9"}'), false);
    assert.deepEqual(wellFormed(JSON.parse('{"a":"\\uD800 \\uDFFF"}')), { a: '\ufffd \ufffd' });
  });

  it('parses JSON text well formed, and throws what JSON.parse throws', () => {
    assert.deepEqual(parseWellFormed('{"a\\udc00":["\\ud800x","\\ud83d\\ude00"]}'), { 'a\ufffd': ['\ufffdx', '\ud83d\ude00'] });
    const plain = '{"a":[1,"b"]}';
    assert.deepEqual(parseWellFormed(plain), JSON.parse(plain));
    assert.throws(() => parseWellFormed('{"a":'), SyntaxError);
  });
});
