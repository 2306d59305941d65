import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Db } from 'mongodb';
import { newId } from '../../src/domain/ids.js';
import type { Manifest, ToolDef } from '../../src/domain/agent.js';
import { AgentStore } from '../../src/store/agents.js';
import { BlobStore } from '../../src/store/blobs.js';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { tarGz } from '../support/archives.js';
import { until } from '../support/wait.js';
import { auditUntilSettled } from './support/audit.js';
import { Cluster } from './support/cluster.js';

const STEPS = 4;

/** A run of STEPS model calls, each followed by a custom tool call on its answer: a long turn to kill a worker in. */
const RUN = `exports.agent = {
  async run(ctx) {
    let total = 0;
    for (let i = 0; i < ${STEPS}; i++) {
      const r = await ctx.model({ input: 'step ' + i });
      total = (await ctx.tool('add', { a: total, b: r.text.length })).sum;
    }
    return 'total ' + total;
  },
};`;

async function codeAgent(db: Db, fakeBase: string): Promise<string> {
  const org = (await db.collection<{ _id: string; name: string }>('orgs').findOne({ name: 'default' }))!;
  const tools: ToolDef[] = [{ name: 'add', kind: 'custom', path: 'tools/add.js', timeout_seconds: 20, description: null, input_schema: null, output_schema: null }];
  const manifest: Manifest = {
    name: 'fault-code-agent',
    sdk: 'troupe-js@1',
    entrypoint: 'agent.js:agent',
    sandbox: { secrets: [], internet_access: false },
    custom_tools: [{ name: 'add', path: 'tools/add.js', kind: 'custom', timeout_seconds: 20 }],
    llm_options: [{ id: 'main', provider: 'openai', model: 'gpt-test', base_url: fakeBase }],
  };
  const archive = await tarGz([
    { name: 'troupe.json', content: JSON.stringify(manifest) },
    { name: 'agent.js', content: RUN },
    { name: 'tools/add.js', content: 'exports.handler = async ({ a, b }) => ({ sum: a + b });' },
  ]);
  const snapshotId = newId('snapshot');
  await pipeline(Readable.from([archive]), new BlobStore(db).upload('snapshots', snapshotId, 'source.tar.gz', { org_id: org._id }));
  const { agent } = await new AgentStore(db).create(
    { id: newId('agent'), orgId: org._id, name: 'fault-code-agent' },
    { id: newId('version'), snapshotId, content: { manifest, llm_options: manifest.llm_options, tools, scripts: {}, entrypoint: manifest.entrypoint, agent_config: { code: true } } },
  );
  return agent._id;
}

describe('fault: a worker SIGKILLed during a code agent turn', function () {
  let c: Cluster;
  let fake: FakeLlmUpstream;
  before(async () => {
    fake = await FakeLlmUpstream.start();
    fake.reply = { text: 'abc' };
    // Each model call takes a while, so the kill lands with one in flight.
    fake.delayMs = 600;
    c = await Cluster.start();
    await c.start('web-1', 'web');
    await c.start('worker-1', 'worker');
  });
  after(async () => {
    await c?.close();
    await fake?.close();
  });

  it('completes the message once, repeating no model call or tool run beyond the one in flight', async () => {
    const db = await c.db();
    const agentId = await codeAgent(db, fake.openaiBase);
    const api = (path: string, body: unknown) => fetch(`${c.webUrls()[0]}${path}`, { method: 'POST', headers: { authorization: `Bearer ${c.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const sid = ((await (await api(`/v1/agents/${agentId}/sessions`, { llm_api_key: 'sk-fake' })).json()) as { id: string }).id;
    const sent = (await (await api(`/v1/sessions/${sid}/events`, { type: 'user.message', content: [{ type: 'text', text: 'go' }] })).json()) as { message: { id: string } };
    const events = db.collection<{ type: string; data_json: string; message_id: string }>('events');
    const count = (type: string, kind?: string) => events.countDocuments({ session_id: sid, type, ...(kind ? { data_json: { $regex: `"kind":"${kind}"` } } : {}) });
    // Kill once a later model call is in flight: one answered, the next started and not answered yet.
    await until(async () => (await count('agent.call_completed')) >= 1 && (await count('agent.call_started', 'model')) > (await count('agent.call_completed')), 30_000);
    await c.kill('worker-1', 'SIGKILL');
    const inFlight = await count('agent.call_started', 'model');
    assert.ok(inFlight < STEPS || (await count('agent.call_completed')) < STEPS, 'the worker died mid-turn');
    await c.start('worker-2', 'worker');
    const { audit } = await auditUntilSettled(db, [sid], new Map([[sent.message.id, sid]]), 60_000);
    assert.deepEqual(audit.problems, []);
    assert.equal(audit.failed, 0);
    const all = await events.find({ session_id: sid }).sort({ sequence_number: 1 }).toArray();
    const answer = all.find((e) => e.type === 'assistant.message_completed');
    assert.deepEqual((JSON.parse(answer!.data_json) as { parts: unknown }).parts, [{ type: 'text', text: `total ${3 * STEPS}` }]);
    assert.equal(all.filter((e) => e.type === 'agent.call_started').length, 2 * STEPS, 'each ctx call journaled once');
    assert.equal(all.filter((e) => e.type === 'tool.call_completed').length, STEPS, 'each tool result recorded once');
    // The fake is the model provider: every request it saw is a model call made. Only the one in flight may repeat.
    assert.ok(fake.requests.length >= STEPS && fake.requests.length <= STEPS + 1, `model calls made: ${fake.requests.length} for ${STEPS} journaled`);
  });
});
