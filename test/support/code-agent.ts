import type { TarEntry } from './archives.js';

/**
 * A JavaScript code agent (troupe-js@1) for the code-agent tests: its run function picks a case by the message's
 * first word. Tools: `add` (custom, sandboxed) and `lookup` (external). LLM options: `main` (openai format, pointed
 * at the fake upstream) and `script` (scripted).
 */
export const CODE_AGENT_JS = `
const net = require('node:net');

async function probe() {
  let fsResult;
  try { fsResult = 'read ' + require('node:fs').readFileSync('/etc/passwd', 'utf8').length; } catch (e) { fsResult = 'refused ' + (e.code || e.message); }
  const netResult = await new Promise((resolve) => {
    try {
      const s = net.connect({ host: '127.0.0.1', port: 8 }, () => { s.destroy(); resolve('connected'); });
      s.on('error', (e) => resolve('refused ' + (e.code || e.message)));
    } catch (e) { resolve('refused ' + (e.code || e.message)); }
  });
  return { fs: fsResult, net: netResult };
}

exports.agent = {
  instructions: 'You are a code agent.',
  async run(ctx, input) {
    const [word, arg] = input.split(' ');
    switch (word) {
      case 'parallel': {
        const [a, w] = await Promise.all([ctx.tool('add', { a: 2, b: 3 }), ctx.tool('lookup', { city: arg })]);
        ctx.emit('tools done');
        const r = await ctx.model({ messages: [{ role: 'user', content: 'sum ' + a.sum + ' in ' + w.summary }] });
        return r.text + ' / ' + a.sum + ' / ' + w.summary;
      }
      case 'diverge':
        await ctx.tool('add', { a: Math.random(), b: 1 });
        return 'unreachable';
      case 'chain': {
        ctx.emit('starting');
        await ctx.sleep(150);
        const r = await ctx.model({ llm_id: 'script', input: 'hi' });
        const meta = ctx.message.metadata ? ctx.message.metadata.k : null;
        return { text: r.text + '|' + meta + '|' + ctx.transcript().length };
      }
      case 'catch':
        try { await ctx.tool('missing_tool', {}); } catch (e) { return 'caught: ' + e.message; }
        return 'not thrown';
      case 'throws':
        throw new TypeError('bad input ' + arg);
      case 'probe':
        return JSON.stringify(await probe());
      case 'wait':
        await ctx.sleep(60000);
        return 'woke';
      case 'ask':
        // An always_ask tool (the control agent's): allowed, it runs; denied, ctx.tool rejects with the deny message.
        try { return 'ran ' + JSON.stringify(await ctx.tool('guarded', { a: 1, b: 2 })); } catch (e) { return 'denied: ' + e.message; }
      case 'mcp':
        return 'mcp ' + JSON.stringify(await ctx.tool('mcp__fake__add', { a: 2, b: 5 }));
      case 'slow':
        return (await ctx.model({ input: 'slow' })).text;
      case 'retry':
        try { return 'model: ' + (await ctx.model({ input: 'retry' })).text; } catch (e) { return 'failed: ' + e.message; }
      case 'history':
        return JSON.stringify(ctx.transcript());
      case 'late-history': {
        // A later step is the first to call ctx.transcript(): the step before it was sent none.
        const a = await ctx.tool('add', { a: 1, b: 1 });
        return JSON.stringify({ sum: a.sum, transcript: ctx.transcript() });
      }
      case 'steps': {
        let total = 0;
        for (let i = 0; i < Number(arg); i++) total += (await ctx.tool('add', { a: total, b: 1 })).sum - total;
        return 'total ' + total;
      }
      default:
        return 'echo ' + input;
    }
  },
};
`;

export function codeAgentFiles(manifest: Record<string, unknown>): TarEntry[] {
  return [
    { name: 'troupe.json', content: JSON.stringify(manifest) },
    { name: 'agent.js', content: CODE_AGENT_JS },
    { name: 'tools/', type: 'directory' },
    { name: 'tools/add.js', content: 'exports.handler = async ({ a, b }) => ({ sum: a + b });\n' },
    { name: 'tools/lookup.json', content: JSON.stringify({ name: 'lookup', description: 'Weather for a city.', input_schema: 'lookup.input.json' }) },
    { name: 'tools/lookup.input.json', content: JSON.stringify({ type: 'object', properties: { city: { type: 'string' } } }) },
    { name: 'script.json', content: JSON.stringify({ turns: [{ text: 'scripted hello' }] }) },
  ];
}

export function codeAgentManifest(fakeBase: string): Record<string, unknown> {
  return {
    name: 'code-agent',
    sdk: 'troupe-js@1',
    entrypoint: 'agent.js:agent',
    sandbox: { secrets: [], internet_access: false },
    custom_tools: [
      { name: 'add', path: 'tools/add.js', timeout_seconds: 20 },
      { name: 'lookup', path: 'tools/lookup.json', kind: 'external', timeout_seconds: 60 },
    ],
    llm_options: [
      { id: 'main', provider: 'openai', model: 'gpt-test', base_url: fakeBase },
      { id: 'script', provider: 'scripted', script: 'script.json' },
    ],
  };
}

/** The Python twin (troupe-py@1): the same cases, run by runner.py's shim. */
export const CODE_AGENT_PY = `
import asyncio
import json
import random
import socket


def probe():
    try:
        with open("/etc/passwd") as f:
            fs = "read %d" % len(f.read())
    except OSError as e:
        fs = "refused %s" % type(e).__name__
    try:
        socket.create_connection(("127.0.0.1", 8), timeout=2).close()
        net = "connected"
    except OSError as e:
        net = "refused %s" % type(e).__name__
    return {"fs": fs, "net": net}


async def run(ctx, input):
    word = input.split(" ")[0]
    if word == "parallel":
        a, w = await asyncio.gather(ctx.tool("add", {"a": 2, "b": 3}), ctx.tool("lookup", {"city": "Oslo"}))
        ctx.emit("tools done")
        r = await ctx.model(llm_id="script", input="hi")
        return "%s / %s / %s" % (r["text"], a["sum"], w["summary"])
    if word == "diverge":
        await ctx.tool("add", {"a": random.random(), "b": 1})
        return "unreachable"
    if word == "ask":
        try:
            return "ran " + json.dumps(await ctx.tool("guarded", {"a": 1, "b": 2}))
        except Exception as e:  # the runner's CallFailed, which the agent's module cannot import
            return "denied: %s: %s" % (type(e).__name__, e)
    if word == "probe":
        return json.dumps(probe())
    if word == "history":
        return json.dumps(ctx.transcript())
    if word == "late-history":
        a = await ctx.tool("add", {"a": 1, "b": 1})
        return json.dumps({"sum": a["sum"], "transcript": ctx.transcript()})
    return "echo " + input


agent = {"instructions": "A Python code agent.", "run": run}
`;

export function pythonCodeAgent(fakeBase: string): { manifest: Record<string, unknown>; files: TarEntry[] } {
  const manifest = { ...codeAgentManifest(fakeBase), name: 'code-agent-py', sdk: 'troupe-py@1', entrypoint: 'agent.py:agent' };
  const files = codeAgentFiles(manifest).map((f) => (f.name === 'agent.js' ? { name: 'agent.py', content: CODE_AGENT_PY } : f));
  return { manifest, files };
}
