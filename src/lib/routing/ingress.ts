import { FORMATS } from '../llm/formats/index.js';
import { type WireFormat } from '../llm/formats/format.js';
import { effortOut } from '../llm/formats/openai-responses/request.js';
import type { Effort, Provider } from '../../domain/providers.js';
import type { JsonSchema } from '../schemas/validator.js';
import { chatBody, messagesBody, responsesBody } from './schemas.js';

/** One of the three routing endpoints: its body schema, wire format and effort vocabulary. */
export interface Ingress {
  format: Provider;
  wire: WireFormat;
  schema: JsonSchema;
  /** The effort as this format writes it. */
  effortLabel(e: Effort): string;
}

const same = (e: Effort) => e;

export const INGRESS: Record<'messages' | 'chat' | 'responses', Ingress> = {
  messages: { format: 'anthropic', wire: FORMATS.anthropic, schema: messagesBody, effortLabel: same },
  chat: { format: 'openai', wire: FORMATS.openai, schema: chatBody, effortLabel: same },
  responses: { format: 'openai-responses', wire: FORMATS['openai-responses'], schema: responsesBody, effortLabel: effortOut },
};

/**
 * The exact paths of the spec: the default router under /v1, a specific one under /{router_id}. The router id is
 * returned as sent (`routerSegment`, still percent-encoded): matching never throws, and the caller decodes it
 * (decodePathSegment) where a malformed escape becomes a 400 in the path's envelope.
 */
export function matchRoutingPath(path: string): { ingress: Ingress; routerSegment: string | null; route: string } | null {
  switch (path) {
    case '/v1/messages':
      return { ingress: INGRESS.messages, routerSegment: null, route: path };
    case '/v1/chat/completions':
      return { ingress: INGRESS.chat, routerSegment: null, route: path };
    case '/v1/responses':
      return { ingress: INGRESS.responses, routerSegment: null, route: path };
  }
  const m = /^\/([^/]+)\/(messages|chat\/completions|v1\/responses)$/.exec(path);
  if (!m || m[1] === 'v1') return null;
  const ingress = m[2] === 'messages' ? INGRESS.messages : m[2] === 'chat/completions' ? INGRESS.chat : INGRESS.responses;
  return { ingress, routerSegment: m[1], route: `/{router_id}/${m[2]}` };
}
