import assert from 'node:assert/strict';
import { countedLedger } from '../../actors/runtime/prometheus-observer.js';
import { Metrics } from '../../src/lib/metrics/metrics.js';
import type { EventDoc } from '../../src/store/ledger.js';

const doc = (type: string, data: unknown = {}) => ({ _id: `s:${type}`, type, data_json: JSON.stringify(data) }) as unknown as EventDoc;

describe('ledger metrics', () => {
  it('counts appended events by type and tool-call outcomes, failures by reason, only after a successful write', async () => {
    const metrics = new Metrics('test');
    const written: EventDoc[] = [];
    let fail = false;
    const ledger = countedLedger({ append: async (docs: EventDoc[]) => { if (fail) throw new Error('duplicate key'); written.push(...docs); }, other: () => 'kept' }, metrics);
    await ledger.append([doc('tool.call_requested'), doc('tool.call_failed', { reason: 'timeout' }), doc('tool.call_completed'), doc('message.status_changed')]);
    fail = true;
    await assert.rejects(ledger.append([doc('tool.call_completed')]));
    assert.equal(written.length, 4);
    assert.equal(ledger.other(), 'kept', 'other methods pass through');
    const text = await metrics.registry.metrics();
    assert.match(text, /troupe_tool_calls_total\{outcome="failed_timeout",role="test"\} 1/);
    assert.match(text, /troupe_tool_calls_total\{outcome="completed",role="test"\} 1/);
    assert.match(text, /troupe_ledger_events_appended_total\{type="message.status_changed",role="test"\} 1/);
  });
});
