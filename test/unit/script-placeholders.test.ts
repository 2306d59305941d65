import assert from 'node:assert/strict';
import { scriptedResponse } from '../../actors/router-proxy/scripted.js';
import type { OutputPart } from '../../src/domain/ledger.js';
import { PLACEHOLDER_CASES } from '../support/placeholder-cases.js';

describe("the scripted provider's {{tool.field}} placeholders (sdks/fixtures/placeholders.json)", () => {
  it('has the shared cases', () => assert.ok(PLACEHOLDER_CASES.length >= 10));

  for (const c of PLACEHOLDER_CASES) {
    it(c.name, () => {
      // The message's tool results as the ledger holds them: JSON text, in the order they came.
      const output: OutputPart[] = c.results.map(([tool, value], i) => ({ type: 'tool_result', tool_call_id: `call_${i}`, tool_name: tool, content: [{ type: 'text', text: JSON.stringify(value) }], is_error: false }));
      const r = scriptedResponse({ turns: [{ tool_calls: [{ name: 'probe', arguments: { v: c.template } }] }] }, 0, output);
      assert.ok(r.ok);
      const call = r.parts[0];
      assert.equal(call.type, 'tool_call');
      assert.deepEqual((call as { arguments: Record<string, unknown> }).arguments.v, c.expected);
    });
  }
});
