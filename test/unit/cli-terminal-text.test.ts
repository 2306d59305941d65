import assert from 'node:assert/strict';
import { terminalSafe } from '../../clients/cli/terminal-text.js';

describe('troupe: text that reaches a terminal', () => {
  it('writes escape sequences, CR, C1 controls and bidirectional overrides as visible escapes', () => {
    // OSC 52 (write the clipboard), a colour, a one-character CSI, a carriage return and a right-to-left override.
    const hostile = 'a\u001b]52;c;ZXZpbA==\u0007b\u001b[31mred\u009b2Jc\rd\u202Eexe.pdf';
    assert.equal(terminalSafe(hostile), 'a\\u001b]52;c;ZXZpbA==\\u0007b\\u001b[31mred\\u009b2Jc\\u000dd\\u202eexe.pdf');
  });

  it('keeps newlines, tabs, joiners and ordinary non-ASCII text', () => {
    const text = 'line 1\n\tline 2: héllo, 日本語, مرحبا, 👩\u200D💻, می\u200Cخواهم';
    assert.equal(terminalSafe(text), text);
  });

  it('leaves JSON output meaning the same: the escapes are JSON’s own', () => {
    const value = { text: 'x\u009b\u202E\u007f\u001b' };
    const line = terminalSafe(JSON.stringify(value));
    assert.doesNotMatch(line, /[\u007f-\u009f\u202e]/);
    assert.deepEqual(JSON.parse(line), value);
  });
});
