import type { SseMessage } from '../sse.js';
import type { LlmRequest, LlmResponse, Part, ResponseFormat, StreamEvent, Target, ToolDef } from '../types.js';

/** What a translated result carries about the routing decision (null outside the router). */
export interface RoutingInfo {
  selected_model: string;
  reasoning_effort: string | null;
  reason: string;
  conversation_id: string;
}

/** Native SSE messages of an upstream → canonical events, one message at a time. */
export interface StreamDecoder {
  push(msg: SseMessage): StreamEvent[];
  /** Called when the upstream body ends; flushes what the format only settles at the end. */
  end(): StreamEvent[];
}

/** Canonical events → the SSE text a client of this format expects. */
export interface StreamEncoder {
  encode(ev: StreamEvent): string;
  /** The format's own error event, for a failure after the stream has started. */
  error(message: string): string;
}

/** One wire format, in both directions. */
export interface WireFormat {
  parseRequest(body: Record<string, unknown>): LlmRequest;
  serializeRequest(req: LlmRequest, target: Target): Record<string, unknown>;
  parseResponse(body: Record<string, unknown>): LlmResponse;
  /** `tools`: the request's, so a call can be written back as the kind of tool the client declared. */
  serializeResponse(res: LlmResponse, routing: RoutingInfo | null, tools?: ToolDef[]): Record<string, unknown>;
  decoder(): StreamDecoder;
  encoder(routing: RoutingInfo | null, tools?: ToolDef[]): StreamEncoder;
}

export function textOf(parts: Part[]): string {
  return parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
}

/** `data:image/png;base64,...` → base64 source; any other URL stays a URL. */
export function imageFromUrl(url: string): Part {
  const m = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return m ? { type: 'image', source: { kind: 'base64', mediaType: m[1], data: m[2] } } : { type: 'image', source: { kind: 'url', url } };
}

export function urlOfImage(part: Extract<Part, { type: 'image' }>): string {
  return part.source.kind === 'url' ? part.source.url : `data:${part.source.mediaType};base64,${part.source.data}`;
}

export function newId(prefix: string): string {
  return `${prefix}${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}`;
}

export type Json = Record<string, unknown>;
export const asArray = (v: unknown): Json[] => (Array.isArray(v) ? (v as Json[]) : []);

/**
 * The OpenAI formats' `response_format` (chat) and `text.format` (responses) → canonical. Chat nests a schema's
 * fields under `json_schema`, responses puts them beside `type`; `text` (the default) is no format.
 */
export function responseFormatIn(f: Json | undefined, fields: (f: Json) => Json): ResponseFormat | undefined {
  if (f?.type === 'json_object') return { type: 'json_object' };
  if (f?.type !== 'json_schema') return undefined;
  const s = fields(f);
  const out: ResponseFormat = { type: 'json_schema', name: String(s.name) };
  if (s.schema && typeof s.schema === 'object') out.schema = s.schema as Json;
  if (typeof s.description === 'string') out.description = s.description;
  if (typeof s.strict === 'boolean') out.strict = s.strict;
  return out;
}

/** A json_schema format's fields as the OpenAI formats write them. */
export function jsonSchemaFields(f: Extract<ResponseFormat, { type: 'json_schema' }>): Json {
  const out: Json = { name: f.name };
  if (f.description !== undefined) out.description = f.description;
  if (f.schema !== undefined) out.schema = f.schema;
  if (f.strict !== undefined) out.strict = f.strict;
  return out;
}
