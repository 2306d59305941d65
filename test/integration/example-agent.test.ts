import assert from 'node:assert/strict';
import { join } from 'node:path';
import { runDemo } from '../../infra/services/demo.js';
import { AgentStore } from '../../src/store/agents.js';
import { createAgentFrom, minimalAgent } from '../support/archives.js';
import { startHarness, type Harness } from '../support/harness.js';

/**
 * The whole product path of a real agent: publish from an archive (the
 * entrypoint read in the sandbox), the scripted model's tool calls, an
 * external tool answered by the client, a custom tool run in the sandbox.
 */
describe('the example agent end to end', function () {
  this.timeout(90_000);
  let h: Harness;
  before(async () => {
    h = await startHarness({ env: { TROUPE_SESSION_SHARDS: '4' } });
  });
  after(async () => {
    await h?.close();
  });

  it('deploys examples/weather-agent and runs a turn through its tools, JavaScript and Python', async () => {
    const lines: string[] = [];
    await runDemo(h.baseUrl, h.apiKey, join(__dirname, '../../../examples/weather-agent'), (l) => lines.push(l));
    const out = lines.join('\n');
    assert.match(out, /answered external tool call get_forecast/);
    assert.match(out, /assistant called get_forecast\(\{"city":"Oslo","country":"NO"\}\)/);
    assert.match(out, /tool convert_temperature: \{"value":53\.6,"unit":"fahrenheit"/, out);
    // The Python tool, run by python3 in the same sandbox.
    assert.match(out, /tool what_to_wear: \{"wear":"a light jacket or a sweater","advice":"Wear a light jacket or a sweater\.","swing_c":6\}/, out);
    assert.match(out, /assistant: Oslo today: a high of 12 °C \(53\.6 °F\)/);
    const agents = new AgentStore(h.running.core.db);
    const [agent] = await agents.list((await h.running.core.stores.orgs.byName('default'))!._id, { limit: 10, after: null });
    const version = await agents.getVersion(agent.org_id, agent.active_version_id!);
    assert.equal(version!.agent_config!.max_turns, 8);
    assert.match(version!.agent_config!.instructions!, /weather assistant/);
  });

  it('refuses an entrypoint that throws or lacks its export, with a clear 400', async () => {
    for (const [source, pattern] of [
      ['throw new Error("boom at load");', /boom at load/],
      ['exports.other = {};', /does not export agent/],
      ['exports.agent = { max_turns: "lots" };', /max_turns/],
    ] as const) {
      const { manifest, entries } = minimalAgent();
      const patched = entries.map((e) => (e.name === 'agent.js' ? { ...e, content: source } : e));
      const res = await createAgentFrom(h, manifest, patched);
      const body = (await res.json()) as { error: { code: string; message: string } };
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(body.error.message, pattern);
    }
  });
});
