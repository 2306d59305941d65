/**
 * A code agent's per-turn overhead against the built-in loop (figures, not pass/fail): the same scripted model, one
 * model call and a text answer per message, sent through the API one at a time with `messages/sync`, on one stack
 * (web, router, worker, webhooks in this process; the shared Redis and MongoDB-wire servers). The built-in loop
 * takes one turn for the model call; the code agent two steps in the sandbox around it. Modes alternate per message.
 * Needs MONGODB_URL and REDIS_URL (`set -a; . /tmp/shared-services.env`, or your own servers).
 */
import { loadavg, cpus } from 'node:os';
import { createAgentFrom } from '../../test/support/archives.js';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { benchArgs } from '../support/args.js';
import { summary } from '../support/percentiles.js';

const USAGE = 'Usage: node dist/bench/code-agent-turn/run.js [--messages 20]';
const values = benchArgs(USAGE, { messages: { type: 'string', default: '20' } }, ['messages']);
const MESSAGES = Number(values.messages);

async function agent(h: Harness, name: string, code: boolean): Promise<string> {
  const manifest = { name, sdk: 'troupe-js@1', entrypoint: 'agent.js:agent', sandbox: { secrets: [], internet_access: false }, custom_tools: [], llm_options: [{ id: 'demo', provider: 'scripted', script: 'script.json' }] };
  const source = code ? 'exports.agent = { async run(ctx, input) { return (await ctx.model({ input })).text; } };' : 'exports.agent = { instructions: "Be brief." };';
  const res = await createAgentFrom(h, manifest, [{ name: 'troupe.json', content: JSON.stringify(manifest) }, { name: 'agent.js', content: source }, { name: 'script.json', content: JSON.stringify({ turns: [{ text: 'Hello.' }] }) }], name);
  if (res.status !== 201) throw new Error(`publish ${name}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

async function turn(h: Harness, agentId: string): Promise<number> {
  const sid = ((await (await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: {} })).json()) as { id: string }).id;
  const t0 = performance.now();
  const res = await h.api(`/v1/sessions/${sid}/messages/sync`, { method: 'POST', json: { parts: [{ type: 'text', text: 'hi' }] } });
  const body = (await res.json()) as { status: string; output: { parts: { text?: string }[] } };
  if (body.status !== 'completed' || body.output.parts.at(-1)?.text !== 'Hello.') throw new Error(`turn: ${JSON.stringify(body)}`);
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const h = await startHarness();
  try {
    const modes = { builtin: await agent(h, 'bench-builtin', false), code: await agent(h, 'bench-code', true) };
    const times: Record<string, number[]> = { builtin: [], code: [] };
    for (const [, id] of Object.entries(modes)) await turn(h, id); // warm-up: extraction, caches
    for (let i = 0; i < MESSAGES; i++) for (const [mode, id] of Object.entries(modes)) times[mode].push(await turn(h, id));
    process.stdout.write(`one-model-call turn, scripted model, ${MESSAGES} messages per mode, ${cpus().length} cores, load ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
    const base = summary(times.builtin);
    for (const mode of Object.keys(times)) {
      const s = summary(times[mode]);
      process.stdout.write(`${mode.padEnd(8)} p50 ${s.p50.toFixed(1)} ms  p99 ${s.p99.toFixed(1)} ms  overhead over the built-in loop (p50) ${(s.p50 - base.p50).toFixed(1)} ms\n`);
    }
  } finally {
    await h.close();
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
