import assert from 'node:assert/strict';
import { defineAgent } from '../../sdks/js/src/index.js';
import { NondeterministicReplay, runLocally } from '../../sdks/js/src/harness.js';
import { PLACEHOLDER_CASES } from '../support/placeholder-cases.js';

describe('sdks/js: the local harness', () => {
  const agent = defineAgent({
    async run(ctx, input) {
      ctx.emit('start');
      const [a, b] = await Promise.all([ctx.tool<{ sum: number }>('add', { a: 1, b: 2 }), ctx.tool<{ sum: number }>('add', { a: 3, b: 4 })]);
      const r = await ctx.model({ input: `${input} ${a.sum + b.sum}` });
      try {
        await ctx.tool('missing');
      } catch (e) {
        return `${r.text} (${(e as Error).message})`;
      }
      return r.text;
    },
  });

  it('answers model calls from the script and tools from handlers, in parallel, and journals each call', async () => {
    const out = await runLocally(agent, { input: 'sum', script: { turns: [{ text: 'ten' }] }, tools: { add: ({ a, b }) => ({ sum: Number(a) + Number(b) }) } });
    assert.equal(out.answer, 'ten (The agent has no tool named missing.)');
    assert.deepEqual(out.emits, ['start']);
    assert.deepEqual(out.journal.map((e) => [e.position, e.kind, e.name]).sort((x, y) => Number(x[0]) - Number(y[0])), [[0, 'emit', 'emit'], [1, 'tool', 'add'], [2, 'tool', 'add'], [3, 'model', 'default'], [4, 'tool', 'missing']]);
  });

  it('throws NondeterministicReplay, naming both calls, when a replay makes another call', async () => {
    let n = 0;
    const flaky = defineAgent({ run: async (ctx) => String(await ctx.tool('add', { a: n++, b: 0 })) });
    await assert.rejects(runLocally(flaky, { input: '', script: { turns: [] }, tools: { add: () => 1 } }), (e: Error) => e instanceof NondeterministicReplay && /at position 0 the run called tool add\({"a":1,"b":0}\), but the journal has tool add\({"a":0,"b":0}\)/.test(e.message));
  });

  it("fills a script's {{tool.field}} placeholders from the latest tool results, as the scripted provider does", async () => {
    const filled = defineAgent({
      async run(ctx) {
        await ctx.tool('add', { a: 1, b: 2 });
        return (await ctx.model({ input: '' })).text;
      },
    });
    const out = await runLocally(filled, { input: '', script: { turns: [{ text: 'sum {{add.sum}}, {{add.missing}}' }] }, tools: { add: ({ a, b }) => ({ sum: Number(a) + Number(b) }) } });
    assert.equal(out.answer, 'sum 3, {{add.missing}}');
  });

  describe('runs the placeholder cases the server and the Python SDK run (sdks/fixtures/placeholders.json)', () => {
    for (const c of PLACEHOLDER_CASES) {
      it(c.name, async () => {
        const probe = defineAgent({
          async run(ctx) {
            for (const [i, [tool]] of c.results.entries()) await ctx.tool(tool, { i });
            const r = await ctx.model({ input: '' });
            return JSON.stringify((r.parts[0] as { arguments: Record<string, unknown> }).arguments.v);
          },
        });
        const tools = Object.fromEntries(c.results.map(([tool]) => [tool, ({ i }: Record<string, unknown>) => c.results[Number(i)][1]]));
        const out = await runLocally(probe, { input: '', script: { turns: [{ tool_calls: [{ name: 'probe', arguments: { v: c.template } as Record<string, unknown> }] }] }, tools });
        assert.deepEqual(JSON.parse(out.answer), c.expected);
      });
    }
  });
});
