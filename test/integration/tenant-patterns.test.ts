import assert from 'node:assert/strict';
import type { ToolDef } from '../../src/domain/agent.js';
import { agentWith } from '../support/agent-fixture.js';
import { createAgentFrom, minimalAgent } from '../support/archives.js';
import { startHarness, type Harness } from '../support/harness.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';
import { until } from '../support/wait.js';

/** Exponential for a backtracking engine on a run of `a`s that does not match: 2^35 steps froze the process. */
const CATASTROPHIC = '^(a|a)*$';

/** Generous for CI: the turn that judges the result is milliseconds on RE2, minutes on RegExp. */
const PROMPT_MS = 2_000;

describe('tenant schemas: patterns run in linear time', function () {
  this.timeout(60_000);
  let h: Harness;
  let worker: RoleProcess;

  before(async () => {
    // The session actor runs in a child process: a frozen one fails the timing assertion rather than the test run.
    h = await startHarness({ roles: ['web'] });
    worker = await startRoleProcess(['worker'], h.env);
  });
  after(async () => {
    worker?.kill('SIGKILL');
    await worker?.exited;
    await h?.close();
  });

  async function refusal(res: Response): Promise<{ code: string; message: string; param?: string }> {
    const text = await res.text();
    assert.equal(res.status, 400, text);
    return (JSON.parse(text) as { error: { code: string; message: string; param?: string } }).error;
  }

  /** The minimal agent with its get_weather output schema replaced. */
  function withOutputSchema(schema: unknown) {
    const { manifest, entries } = minimalAgent();
    return { manifest, entries: entries.map((e) => (e.name === 'tools/get_weather.output.json' ? { ...e, content: JSON.stringify(schema) } : e)) };
  }

  it('refuses at publish a pattern RE2 cannot run, naming the tool and the pattern', async () => {
    const cases: [unknown, string][] = [
      [{ type: 'object', properties: { temp_c: { type: 'string', pattern: '^(a+)\\1$' } } }, '^(a+)\\\\1$'],
      [{ type: 'object', properties: { temp_c: { type: 'string', pattern: '^\\k<x>(?<x>a)$' } } }, '^\\\\k<x>(?<x>a)$'],
      [{ type: 'object', patternProperties: { '^(?!secret)': { type: 'number' } } }, '^(?!secret)'],
      [{ type: 'object', propertyNames: { pattern: '(?<=a)b' } }, '(?<=a)b'],
    ];
    for (const [schema, shown] of cases) {
      const { manifest, entries } = withOutputSchema(schema);
      const err = await refusal(await createAgentFrom(h, manifest, entries));
      assert.equal(err.code, 'invalid_tool_schema', err.message);
      assert.equal(err.param, 'manifest.custom_tools[0]');
      assert.ok(err.message.includes('"get_weather"'), `names the tool: ${err.message}`);
      assert.ok(err.message.includes(`"${shown}"`), `names the pattern ${shown}: ${err.message}`);
    }
    // What RE2 runs is taken, the catastrophic-for-backtracking pattern included.
    const ok = withOutputSchema({ type: 'object', properties: { temp_c: { type: 'string', pattern: CATASTROPHIC } } });
    const res = await createAgentFrom(h, ok.manifest, ok.entries);
    assert.equal(res.status, 201, await res.text());
  });

  it('refuses a tool schema file over the size bound', async () => {
    const big = { type: 'object', description: 'x'.repeat(300 * 1024) };
    const { manifest, entries } = withOutputSchema(big);
    const err = await refusal(await createAgentFrom(h, manifest, entries));
    assert.equal(err.code, 'invalid_tool_schema');
    assert.match(err.message, /at most 262144/);
  });

  it(`judges a result against ${CATASTROPHIC} promptly through the API, and the session goes on`, async () => {
    const tool: ToolDef = {
      name: 'echo',
      kind: 'external',
      path: 'tools/echo.json',
      timeout_seconds: 60,
      description: 'Echo.',
      input_schema: { type: 'object' },
      output_schema: { type: 'object', properties: { answer: { type: 'string', pattern: CATASTROPHIC } }, required: ['answer'] },
    };
    const { agentId } = await agentWith(h, {
      tools: [tool],
      llm_options: [{ id: 'main', provider: 'scripted', script: 's.json' }],
      scripts: { main: { turns: [{ tool_calls: [{ name: 'echo', arguments: {}, id: 'call_1' }] }, { text: 'done' }] } },
    });
    const sid = ((await (await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: {} })).json()) as { id: string }).id;
    const sent = await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: 'go' }] } });
    assert.equal(sent.status, 201);
    const mid = ((await sent.json()) as { message: { id: string } }).message.id;
    const message = async () => (await (await h.api(`/v1/sessions/${sid}/messages/${mid}`)).json()) as { status: string };
    await until(async () => (await message()).status === 'requires_action');
    const submit = (answer: string) =>
      h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'tool.result_submitted', message_id: mid, tool_call_id: 'call_1', result: { answer } }, signal: AbortSignal.timeout(PROMPT_MS) });
    const started = Date.now();
    const bad = await submit(`${'a'.repeat(40)}!`);
    const took = Date.now() - started;
    const body = (await bad.json()) as { error: { code: string; message: string } };
    assert.equal(bad.status, 422);
    assert.equal(body.error.code, 'tool_result_invalid');
    assert.ok(took < PROMPT_MS, `answered in ${took} ms`);
    // The worker still serves: a matching result completes the message.
    const good = await submit('a'.repeat(40));
    assert.equal(good.status, 201, await good.text());
    await until(async () => (await message()).status === 'completed');
  });
});
