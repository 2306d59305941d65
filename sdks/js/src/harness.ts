/**
 * Runs a code agent locally, without a server: its model calls answered by a script (the `scripted` provider's
 * format: `{turns: [{text} | {tool_calls}]}`, one turn per model call), its tools by handlers you pass. Then it runs
 * the agent a second time answering every call from the first run's journal, as Troupe replays a turn, and throws
 * `NondeterministicReplay` when the second run makes a different call: the error Troupe would fail the message with.
 */
import type { Agent, Ctx, MessageInfo, ModelResponse, TranscriptEntry } from './index.js';
// The placeholder fill Troupe's scripted provider uses, so a script.json answers the same here and deployed.
import { fillPlaceholders as fill } from '../../../src/domain/script-placeholders.js';

export interface ScriptTurn {
  text?: string;
  tool_calls?: { name: string; arguments: Record<string, unknown>; id?: string }[];
}

export interface LocalRun {
  input: string;
  script: { turns: ScriptTurn[] };
  tools?: Record<string, (args: Record<string, unknown>) => unknown>;
  metadata?: Record<string, string> | null;
  transcript?: TranscriptEntry[];
}

export interface JournalEntry {
  position: number;
  kind: 'model' | 'tool' | 'sleep' | 'emit';
  name: string;
  arguments: unknown;
  result: { ok: true; output: unknown } | { ok: false; error: string };
}

export interface LocalResult {
  answer: string;
  journal: JournalEntry[];
  emits: string[];
}

export class NondeterministicReplay extends Error {
  override name = 'NondeterministicReplay';
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(',')}}`;
  return JSON.stringify(v ?? null);
}

function scripted(turns: ScriptTurn[], index: number, results: Map<string, unknown>): ModelResponse {
  const turn = turns[index] ?? [...turns].reverse().find((t) => t.text !== undefined) ?? { text: '' };
  if (turn.tool_calls) {
    const parts = turn.tool_calls.map((c, i) => ({ type: 'tool_call' as const, id: c.id ?? `call_${index}_${i}`, name: c.name, arguments: fill(c.arguments, results) as Record<string, unknown> }));
    return { text: '', parts, stop_reason: 'tool_use', usage: null };
  }
  const text = fill(turn.text ?? '', results) as string;
  return { text, parts: [{ type: 'text', text }], stop_reason: 'end_turn', usage: null };
}

async function once(agent: Agent, run: LocalRun, replay: JournalEntry[] | null): Promise<LocalResult> {
  const journal: JournalEntry[] = [];
  const emits: string[] = [];
  let next = 0;
  let models = 0;
  const results = new Map<string, unknown>();
  const record = async (kind: JournalEntry['kind'], name: string, raw: unknown, live: () => unknown): Promise<unknown> => {
    const position = next++;
    const args = JSON.parse(JSON.stringify(raw ?? {})) as unknown;
    let result: JournalEntry['result'];
    if (replay) {
      const was = replay[position];
      if (!was || was.kind !== kind || was.name !== name || canonical(was.arguments) !== canonical(args)) {
        throw new NondeterministicReplay(`nondeterministic_replay: at position ${position} the run called ${kind} ${name}(${canonical(args)}), but the journal has ${was ? `${was.kind} ${was.name}(${canonical(was.arguments)})` : 'nothing'}.`);
      }
      result = was.result;
    } else {
      try {
        result = { ok: true, output: JSON.parse(JSON.stringify((await live()) ?? null)) as unknown };
      } catch (e) {
        result = { ok: false, error: e instanceof Error ? e.message : String(e) };
      }
    }
    journal.push({ position, kind, name, arguments: args, result });
    if (kind === 'tool' && result.ok) results.set(name, result.output);
    if (!result.ok) throw new Error(result.error);
    return result.output;
  };
  const message: MessageInfo = { id: 'msg_local', parts: [{ type: 'text', text: run.input }], metadata: run.metadata ?? null };
  const ctx: Ctx = {
    input: run.input,
    message,
    model: (req) => record('model', req.llm_id ?? 'default', req, () => scripted(run.script.turns, models++, results)) as Promise<ModelResponse>,
    tool: <T>(name: string, args: Record<string, unknown> = {}) =>
      record('tool', name, args, () => {
        const handler = run.tools?.[name];
        if (!handler) throw new Error(`The agent has no tool named ${name}.`);
        return handler(args);
      }) as Promise<T>,
    sleep: (ms) => record('sleep', 'sleep', { ms }, () => null).then(() => undefined),
    emit: (text) => {
      const position = next++;
      emits.push(String(text));
      journal.push({ position, kind: 'emit', name: 'emit', arguments: { text: String(text) }, result: { ok: true, output: null } });
    },
    transcript: () => run.transcript ?? [],
  };
  const out = await agent.run(ctx, run.input);
  return { answer: typeof out === 'string' ? out : out.text, journal, emits };
}

/** Runs `agent` on `run`, then replays it against its own journal; returns the first run's answer, journal and emits. */
export async function runLocally(agent: Agent, run: LocalRun): Promise<LocalResult> {
  const first = await once(agent, run, null);
  const replayed = await once(agent, run, [...first.journal].sort((a, b) => a.position - b.position));
  if (replayed.answer !== first.answer) throw new NondeterministicReplay(`nondeterministic_replay: the replay answered ${JSON.stringify(replayed.answer)}, the run ${JSON.stringify(first.answer)}.`);
  return first;
}
