/**
 * The Troupe agent SDK for JavaScript and TypeScript (`sdk: "troupe-js@1"`): the types of the `ctx` a code agent's
 * run function gets, and `defineAgent` to check an agent against them. Nothing here is needed at run time inside
 * Troupe (the sandbox provides `ctx`); a TypeScript agent compiled before upload imports only types from it.
 * Reference: docs/code-agents.md. Local runs without a server: ./harness.ts.
 */

/** A model call: `messages` (or `input`, one user message), an optional system prompt, the agent's tools to offer by name. */
export interface ModelRequest {
  /** An llm option of the manifest; the session's when absent. */
  llm_id?: string;
  system?: string;
  messages?: { role: 'user' | 'assistant'; content: string }[];
  input?: string;
  tools?: string[];
  max_tokens?: number;
}

export type ModelPart = { type: 'text'; text: string } | { type: 'tool_call'; id: string; name: string; arguments: Record<string, unknown> };

export interface ModelResponse {
  /** The text parts joined. */
  text: string;
  parts: ModelPart[];
  stop_reason: 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'refusal';
  usage: { input_tokens: number; output_tokens: number } | null;
}

/** One earlier turn of the session, as `ctx.transcript()` gives it. */
export interface TranscriptEntry {
  role: 'user' | 'assistant';
  text: string;
}

export interface MessageInfo {
  id: string;
  parts: { type: string; text?: string; file_id?: string }[];
  metadata: Record<string, string> | null;
}

/**
 * What a run function may do. Every call is journaled in the session's ledger and answered from it when the run is
 * replayed, so a run must make the same calls in the same order each time (no Date.now() or Math.random() in what
 * decides a call); a run that does not fails with `nondeterministic_replay`. Start calls before awaiting them to
 * run them in parallel (`Promise.all`).
 */
export interface Ctx {
  /** The message's text. */
  readonly input: string;
  readonly message: MessageInfo;
  /** Calls a model through Troupe (its keys never reach the agent). Rejects when the call fails. */
  model(request: ModelRequest): Promise<ModelResponse>;
  /** Calls one of the agent's tools: custom (sandboxed) or external (answered by the client). Rejects with the tool's error. */
  tool<T = unknown>(name: string, args?: Record<string, unknown>): Promise<T>;
  /** Sleeps durably: the agent holds no process meanwhile. */
  sleep(ms: number): Promise<void>;
  /** Progress text, recorded as an `agent.progress` event. */
  emit(text: string): void;
  /** The session's earlier turns. */
  transcript(): TranscriptEntry[];
}

/** The entrypoint export of a code agent: its run function, and optionally the instructions a model call without `system` gets. */
export interface Agent {
  instructions?: string;
  run(ctx: Ctx, input: string): Promise<string | { text: string }>;
}

/** Checks an agent's shape at compile time and returns it: `exports.agent = defineAgent({ async run(ctx, input) { … } })`. */
export function defineAgent<A extends Agent>(agent: A): A {
  return agent;
}
