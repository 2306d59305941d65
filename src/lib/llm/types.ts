/**
 * The canonical model-call types. Every wire format (anthropic messages, openai
 * chat completions, openai responses) is parsed into these and serialized out
 * of them, so N formats need 2N translators rather than N² pairwise ones.
 */

import { PROVIDER_SPECS, type Effort, type Provider } from '../../domain/providers.js';


export type ImageSource = { kind: 'url'; url: string } | { kind: 'base64'; mediaType: string; data: string };

/**
 * An Anthropic prompt-cache breakpoint (`cache_control`, e.g. `{"type": "ephemeral", "ttl": "1h"}`), kept as the client
 * sent it and given back to anthropic candidates in the same place. OpenAI caches prompts by itself and gets none.
 */
export type CacheControl = Record<string, unknown>;

/** `document`: a file the model reads natively (PDF), base64 encoded; text files are sent as text parts instead. */
export type Part = ({ type: 'text'; text: string } | { type: 'image'; source: ImageSource } | { type: 'document'; mediaType: string; data: string; filename: string }) & { cache?: CacheControl };

export type Item =
  | { kind: 'message'; role: 'user' | 'assistant'; content: Part[] }
  | { kind: 'tool_call'; id: string; name: string; arguments: string; cache?: CacheControl }
  | { kind: 'tool_result'; callId: string; content: Part[]; isError?: boolean; cache?: CacheControl }
  /** A responses `configuration_update` input item; only some models understand it. */
  | { kind: 'config_update'; effort: Effort };

export interface ToolDef {
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
  /** A responses `custom` tool (its one argument is the `input` text): its calls go back to the client as custom tool calls. */
  custom?: boolean;
  /** A responses namespaced tool: `name` is the flat `<namespace>__<localName>` every provider accepts, and its calls go back split. */
  namespace?: string;
  localName?: string;
  cache?: CacheControl;
}

export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };

/** Structured output: the answer's text is a JSON object, of any shape or matching `schema`. */
export type ResponseFormat = { type: 'json_object' } | { type: 'json_schema'; name: string; schema?: Record<string, unknown>; description?: string; strict?: boolean };

export interface LlmRequest {
  system?: string;
  /** The system prompt as blocks, set only when one carries a cache breakpoint (anthropic in); `system` is their text. */
  systemParts?: Part[];
  /** Anthropic's top-level `cache_control`: a breakpoint on the request's last cacheable block. */
  cacheControl?: CacheControl;
  items: Item[];
  tools?: ToolDef[];
  toolChoice?: ToolChoice;
  /** False: at most one tool call per turn. */
  parallelToolCalls?: boolean;
  responseFormat?: ResponseFormat;
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  stop?: string[];
  /** The effort the model runs at (after configuration updates). */
  effort?: Effort;
  /** Anthropic extended thinking, when the caller asked for it explicitly: with a token budget, or adaptive (the model decides). */
  thinking?: { budgetTokens: number } | { adaptive: true };
  stream: boolean;
}

export type StopReason = 'end' | 'max_tokens' | 'tool_use' | 'stop_sequence' | 'refusal';

/**
 * Token counts in OpenAI's sense: `inputTokens` is every prompt token, cached or not, and the cache counts are parts
 * of it. Anthropic's `input_tokens` is only the part neither read from nor written to the cache; its format converts.
 */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  /** Prompt tokens read from the provider's prompt cache. */
  cacheReadTokens?: number;
  /** Prompt tokens written to the prompt cache (Anthropic only; OpenAI counts them as ordinary prompt tokens). */
  cacheWriteTokens?: number;
}

/** The prompt tokens neither read from nor written to the cache: Anthropic's `input_tokens`. */
export const uncachedInput = (u: Usage): number => u.inputTokens - (u.cacheReadTokens ?? 0) - (u.cacheWriteTokens ?? 0);

/** The input tokens Troupe records and bills for a call: the figure the provider's description names (`recordedInput`). */
export const recordedInput = (u: Usage, provider: Provider): number => (PROVIDER_SPECS[provider].recordedInput === 'uncached' ? uncachedInput(u) : u.inputTokens);

export type OutBlock = { type: 'text'; text: string } | { type: 'tool_call'; id: string; name: string; arguments: string };

export interface LlmResponse {
  id: string;
  model: string;
  blocks: OutBlock[];
  stop: StopReason;
  usage: Usage;
}

/**
 * Canonical stream events. Output blocks are numbered in order; a block is
 * opened, receives deltas and is closed before the next opens, which every
 * format can express.
 */
export type StreamEvent =
  | { type: 'start'; id: string; model: string }
  | { type: 'block_start'; index: number; block: { type: 'text' } | { type: 'tool_call'; id: string; name: string } }
  | { type: 'text'; index: number; text: string }
  | { type: 'args'; index: number; json: string }
  | { type: 'block_stop'; index: number }
  | { type: 'finish'; stop: StopReason; usage: Usage };

/** Where and how one upstream model is called. */
export interface Target {
  provider: Provider;
  model: string;
  baseUrl: string;
  apiKey: string;
  /** Other secret values the provider must never get to echo back into Troupe (the session's secrets). */
  redact?: string[];
  /** Forward `configuration_update` items (openai-responses models that understand them). */
  configUpdates?: boolean;
  /** Anthropic models that take only adaptive thinking: reasoning effort goes as `output_config.effort`, never as a token budget. */
  adaptiveThinking?: boolean;
}
