/**
 * The protocol between a code agent's step (its run function replayed in the sandbox, src/lib/sandbox/runner.ts and
 * python/runner.py) and the session actor: what a step reports, and the check that holds a report to it. The report
 * comes out of tenant code's process, so it is checked like any client input before a decision reads it.
 */

/** A `ctx` call the run made past its journal: it is recorded and dispatched, and the run waits on it. */
export interface StepCall {
  position: number;
  kind: 'model' | 'tool' | 'sleep';
  name: string;
  arguments: Record<string, unknown>;
}

/** `ctx.emit`: progress text, journaled at its position so a replay does not emit it again. */
export interface StepEmit {
  position: number;
  text: string;
}

export type StepOutcome =
  /** The run awaits `calls` (all it started before waiting: several are parallel calls). */
  | { kind: 'suspend'; emits: StepEmit[]; calls: StepCall[] }
  /** The run returned its final answer. */
  | { kind: 'done'; emits: StepEmit[]; answer: string }
  /** The run threw, diverged from its journal (`nondeterministic_replay: …`), or its process failed. */
  | { kind: 'failed'; emits: StepEmit[]; error: string };

/** A model call's or a sleep's result, as journaled and as the run gets it back. */
export type AgentCallResult =
  | { ok: true; output: unknown }
  /** `retryable`, `retry_after_ms`: a model call's provider failure that the session retries before the run sees it (never journaled). */
  | { ok: false; error: string; retryable?: boolean; retry_after_ms?: number };

/** Most ctx calls one message may make; a run past it fails instead of growing its ledger without end. */
export const MAX_AGENT_CALLS = 2000;
const MAX_NAME = 128;
const MAX_ERROR = 4096;
const MAX_TEXT = 64 * 1024;

const KINDS = new Set(['model', 'tool', 'sleep']);

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

function malformed(why: string): StepOutcome {
  return { kind: 'failed', emits: [], error: `The agent's step reported a malformed result (${why}).` };
}

/** The final answer as text: a string, an object's `text`, else its JSON. */
function answerText(answer: unknown): string {
  if (typeof answer === 'string') return answer;
  if (isObject(answer) && typeof answer.text === 'string') return answer.text;
  return JSON.stringify(answer ?? null);
}

/**
 * The step's report as a decision may trust it, else a failure saying why: known kinds, bounded strings, and
 * positions that continue the journal of `at` without a gap or a repeat.
 */
export function checkStepOutcome(raw: unknown, at: number): StepOutcome {
  if (!isObject(raw)) return malformed('not an object');
  const emits: StepEmit[] = [];
  for (const e of Array.isArray(raw.emits) ? raw.emits : []) {
    if (!isObject(e) || !Number.isInteger(e.position) || typeof e.text !== 'string') return malformed('an emit');
    emits.push({ position: e.position as number, text: e.text.slice(0, MAX_TEXT) });
  }
  const calls: StepCall[] = [];
  for (const c of Array.isArray(raw.calls) ? raw.calls : []) {
    if (!isObject(c) || !Number.isInteger(c.position) || !KINDS.has(c.kind as string) || typeof c.name !== 'string' || c.name.length > MAX_NAME || !isObject(c.arguments)) return malformed('a call');
    calls.push({ position: c.position as number, kind: c.kind as StepCall['kind'], name: c.name, arguments: c.arguments });
  }
  const positions = [...emits, ...calls].map((x) => x.position).sort((a, b) => a - b);
  if (positions.some((p, i) => p !== at + i)) return malformed(`positions must continue the journal from ${at}`);
  if (at + positions.length > MAX_AGENT_CALLS) return { kind: 'failed', emits: [], error: `The run made more than ${MAX_AGENT_CALLS} ctx calls in one message.` };
  if (raw.kind === 'done') return { kind: 'done', emits, answer: answerText(raw.answer).slice(0, MAX_TEXT * 4) };
  if (raw.kind === 'failed') return { kind: 'failed', emits, error: String(raw.error ?? 'The run failed.').slice(0, MAX_ERROR) };
  if (raw.kind === 'suspend' && calls.length > 0) return { kind: 'suspend', emits, calls };
  return malformed('unknown kind, or a suspend without calls');
}

/**
 * A message's first step is sent the session's transcript; its later steps only once its run has called
 * ctx.transcript() (reading the session's messages at every step cost up to ~6% of one on a long session). The
 * step that calls it first without one stops and asks (`wantsTranscript`), and is run again with it; a step sent one
 * says whether it called it (`transcriptUsed`). Neither is anything the session sees (actors/tool-runner/run-agent-step.ts).
 */
export function wantsTranscript(raw: unknown): boolean {
  return isObject(raw) && raw.kind === 'transcript';
}

export function transcriptUsed(raw: unknown): boolean {
  return isObject(raw) && raw.transcript_used === true;
}
