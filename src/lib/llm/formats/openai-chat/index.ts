import type { WireFormat } from '../format.js';
import { parseChatRequest, serializeChatRequest } from './request.js';
import { parseChatResponse, serializeChatResponse } from './response.js';
import { ChatDecoder, ChatEncoder } from './stream.js';

/** OpenAI chat completions (`provider: openai`). */
export const openaiChat: WireFormat = {
  parseRequest: parseChatRequest,
  serializeRequest: serializeChatRequest,
  parseResponse: parseChatResponse,
  serializeResponse: serializeChatResponse,
  decoder: () => new ChatDecoder(),
  encoder: (routing) => new ChatEncoder(routing),
};
