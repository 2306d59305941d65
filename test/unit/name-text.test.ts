import assert from 'node:assert/strict';
import { refusedInName, withoutRefused } from '../../src/domain/name-text.js';
import { nameString } from '../../src/lib/schemas/common.js';
import { check } from '../../src/lib/schemas/validator.js';

const schema = { type: 'object', properties: { name: nameString(200) } };

/** Message for an object `{name}` refused by the name schema, or null when accepted. */
function refusal(name: string): string | null {
  try {
    check(schema, { name });
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

describe('name text (controls, bidirectional and invisible characters refused)', () => {
  const refused = ['\u0000', '\u001b', '\u007f', '\u0080', '\u009b', '\u009f', '\u061c', '\u200b', '\u200e', '\u200f', '\u2028', '\u2029', '\u202a', '\u202e', '\u2060', '\u2066', '\u2069', '\ufeff'];
  const allowed = ['plain', 'Zoë', 'שלום עולם', 'مرحبا', '\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645', '👨\u200d👩\u200d👧', '<img src=x onerror=alert(1)>', '\u00a0nbsp', '\u00ad', 'tab-free', '\ud83d\ude00'];

  it('names the first refused character as U+XXXX', () => {
    for (const c of refused) assert.equal(refusedInName(`ab${c}cd`), `U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`, JSON.stringify(c));
    assert.equal(refusedInName('x\u202ey\u0000'), 'U+202E');
  });

  it('allows ordinary text in every script, joiners that words and emoji need included', () => {
    for (const s of allowed) assert.equal(refusedInName(s), null, JSON.stringify(s));
  });

  it('the schema pattern (Ajv) and the function agree, and the 400 names the field and the character', () => {
    for (const c of refused) assert.equal(refusal(`ab${c}cd`), `name contains ${refusedInName(c)}; names may not hold control, bidirectional or invisible characters.`, JSON.stringify(c));
    for (const s of allowed) assert.equal(refusal(s), null, JSON.stringify(s));
  });

  it('strips refused characters from names taken as sent', () => {
    assert.equal(withoutRefused('invoice\u202efdp.exe'), 'invoicefdp.exe');
    assert.equal(withoutRefused('a\u0000b\u2066c\u2069\ufeff'), 'abc');
    assert.equal(withoutRefused('Zoë 👨\u200d👩\u200d👧'), 'Zoë 👨\u200d👩\u200d👧');
  });
});
