import type { WireFormat } from '../format.js';
import { parseAnthropicRequest, serializeAnthropicRequest } from './request.js';
import { parseAnthropicResponse, serializeAnthropicResponse } from './response.js';
import { AnthropicDecoder, AnthropicEncoder } from './stream.js';

/** Anthropic messages (`provider: anthropic`). */
export const anthropicMessages: WireFormat = {
  parseRequest: parseAnthropicRequest,
  serializeRequest: serializeAnthropicRequest,
  parseResponse: parseAnthropicResponse,
  serializeResponse: serializeAnthropicResponse,
  decoder: () => new AnthropicDecoder(),
  encoder: (routing) => new AnthropicEncoder(routing),
};
