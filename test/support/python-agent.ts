import assert from 'node:assert/strict';
import type { TarEntry } from './archives.js';
import { createAgentFrom } from './archives.js';
import type { Harness } from './harness.js';
import { until } from './wait.js';

/** One Python tool of a test agent: its module source and time limit. */
export interface PyTool {
  source: string;
  timeout_seconds?: number;
}

/** A tool call's outcome as the session's events tell it. */
export type ToolOutcome = { ok: true; output: unknown } | { ok: false; error: string; reason: string };

interface Ev {
  type: string;
  data: Record<string, unknown>;
}

/**
 * Publishes, through the API, an agent whose custom tools are the given
 * Python modules, with one scripted llm option per case: option `<name>`
 * calls the named tools (each with its arguments) in one turn, then answers.
 */
export async function publishPythonAgent(h: Harness, tools: Record<string, PyTool>, cases: Record<string, Record<string, Record<string, unknown>>>, opts: { secrets?: string[]; name?: string; files?: TarEntry[]; pythonEntrypoint?: boolean } = {}): Promise<string> {
  const ids = Object.keys(cases);
  const manifest = {
    name: opts.name ?? 'python-tools',
    sdk: 'troupe-js@1',
    entrypoint: opts.pythonEntrypoint ? 'agent.py:agent' : 'agent.js:agent',
    sandbox: { secrets: opts.secrets ?? [], internet_access: false },
    custom_tools: Object.entries(tools).map(([name, t]) => ({ name, path: `tools/${name}.py`, timeout_seconds: t.timeout_seconds ?? 10 })),
    llm_options: ids.map((id) => ({ id, provider: 'scripted', script: `scripts/${id}.json` })),
  };
  const entries: TarEntry[] = [
    { name: 'troupe.json', content: JSON.stringify(manifest) },
    opts.pythonEntrypoint
      ? { name: 'agent.py', content: `def helper():\n    pass\n\nagent = {"instructions": "Test tools.", "llm": ${JSON.stringify(ids[0])}, "max_turns": 4, "on_start": helper}\n` }
      : { name: 'agent.js', content: `exports.agent = { instructions: "Test tools.", llm: ${JSON.stringify(ids[0])} };\n` },
    ...Object.entries(tools).map(([name, t]) => ({ name: `tools/${name}.py`, content: t.source })),
    ...(opts.files ?? []),
    ...ids.map((id) => ({
      name: `scripts/${id}.json`,
      content: JSON.stringify({ turns: [{ tool_calls: Object.entries(cases[id]).map(([name, args], i) => ({ name, arguments: args, id: `call_${i}` })) }, { text: 'done' }] }),
    })),
  ];
  const res = await createAgentFrom(h, manifest, entries, opts.name ?? 'python-tools');
  const body = await res.text();
  assert.equal(res.status, 201, body);
  return (JSON.parse(body) as { id: string }).id;
}

/** Starts a session on llm option `llmId`, sends one message and waits for it to finish (within `ms`). */
export async function startCase(h: Harness, agentId: string, llmId: string, session: Record<string, unknown> = {}): Promise<string> {
  const res = await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { llm_id: llmId, ...session } });
  const body = await res.text();
  assert.equal(res.status, 201, body);
  const sid = (JSON.parse(body) as { id: string }).id;
  const sent = await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: 'go' }] } });
  assert.equal(sent.status, 201, await sent.text());
  return sid;
}

/** Waits for the session's message to complete and returns each tool's outcome by tool name. */
export async function outcomes(h: Harness, sid: string, ms = 25_000): Promise<Record<string, ToolOutcome>> {
  const events = await until(async () => {
    const page = (await (await h.api(`/v1/sessions/${sid}/events?limit=100`)).json()) as { events: Ev[] };
    const done = page.events.some((e) => e.type === 'message.status_changed' && ['completed', 'failed'].includes(String(e.data.to)));
    return done ? page.events : undefined;
  }, ms);
  const out: Record<string, ToolOutcome> = {};
  for (const e of events) {
    if (e.type === 'tool.call_completed') out[String(e.data.tool_name)] = { ok: true, output: e.data.output };
    if (e.type === 'tool.call_failed') out[String(e.data.tool_name)] = { ok: false, error: String(e.data.error), reason: String(e.data.reason) };
  }
  return out;
}

/** The output of a tool that must have succeeded. */
export function outputOf<T>(all: Record<string, ToolOutcome>, tool: string): T {
  const o = all[tool];
  assert.ok(o, `tool ${tool} ran: ${JSON.stringify(all)}`);
  assert.equal(o.ok, true, `${tool}: ${JSON.stringify(o)}`);
  return (o as { output: T }).output;
}

/** The error of a tool that must have failed. */
export function errorOf(all: Record<string, ToolOutcome>, tool: string): string {
  const o = all[tool];
  assert.ok(o, `tool ${tool} ran: ${JSON.stringify(all)}`);
  assert.equal(o.ok, false, `${tool} should have failed: ${JSON.stringify(o)}`);
  return (o as { error: string }).error;
}
