// The example's local test: runs agent.js with the SDK's harness (sdks/js), no server. Its model is this folder's
// script.json, its custom tool the real tools/lookup_account.js, and the external service_status answered here as
// your service would. The harness then replays the run against its own journal, as Troupe does after each wait.
// Run: npm run build && npx mocha dist/examples/triage-agent-js/agent.test.js (npm test runs it in its unit layer).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Agent } from '../../sdks/js/src/index.js';
import { runLocally, type ScriptTurn } from '../../sdks/js/src/harness.js';

// Compiled into dist/examples/triage-agent-js/: the agent's own files stay in the source folder.
const folder = join(__dirname, '../../../examples/triage-agent-js');
const { agent } = require(join(folder, 'agent.js')) as { agent: Agent };
const { handler } = require(join(folder, 'tools/lookup_account.js')) as { handler: (args: { question: string }) => Promise<unknown> };
const script = JSON.parse(readFileSync(join(folder, 'script.json'), 'utf8')) as { turns: ScriptTurn[] };

describe('examples/triage-agent-js, run locally with the sdks/js harness', () => {
  const tools = { lookup_account: (a: Record<string, unknown>) => handler(a as { question: string }), service_status: () => ({ status: 'all systems normal' }) };

  it('routes a billing question, calls both tools in parallel, breaks the rule once and retries', async () => {
    const out = await runLocally(agent, { input: 'When does my plan renew?', script, tools });
    // script.json's first answer breaks the "Answer:" rule; its second keeps it, its {{tool.field}}s filled as deployed.
    assert.equal(out.answer, 'Answer: your Team plan renews on 2026-12-01; service status: all systems normal.');
    assert.deepEqual(out.emits, ['routed to billing', 'the answer broke the format rule; retrying once']);
    assert.deepEqual(out.journal.map((e) => `${e.kind} ${e.name}`), ['emit emit', 'tool lookup_account', 'tool service_status', 'model default', 'emit emit', 'model default']);
    assert.deepEqual(out.journal[2].arguments, { area: 'billing' });
    assert.deepEqual(out.journal[1].result, { ok: true, output: { plan: 'Team', renews_on: '2026-12-01', open_tickets: 0 } });
  });

  it('routes a technical question and does not retry an answer that keeps the rule', async () => {
    const out = await runLocally(agent, { input: 'The app crashes on login', script: { turns: [{ text: 'Answer: clear the cache.' }] }, tools });
    assert.equal(out.answer, 'Answer: clear the cache.');
    assert.deepEqual(out.emits, ['routed to technical']);
    assert.equal(out.journal.filter((e) => e.kind === 'model').length, 1);
    assert.deepEqual(out.journal[2].arguments, { area: 'technical' });
  });

  it('hands a second broken answer to a human instead of retrying again', async () => {
    const out = await runLocally(agent, { input: 'Refund please', script: { turns: [{ text: 'no' }, { text: 'still no' }] }, tools });
    assert.equal(out.answer, 'Answer: (needs a human) still no');
  });
});
