import type { WireFormat } from '../format.js';
import { parseResponsesRequest, serializeResponsesRequest } from './request.js';
import { parseResponsesResponse, serializeResponsesResponse } from './response.js';
import { ResponsesDecoder, ResponsesEncoder } from './stream.js';

/** OpenAI responses (`provider: openai-responses`). */
export const openaiResponses: WireFormat = {
  parseRequest: parseResponsesRequest,
  serializeRequest: serializeResponsesRequest,
  parseResponse: parseResponsesResponse,
  serializeResponse: serializeResponsesResponse,
  decoder: () => new ResponsesDecoder(),
  encoder: (routing, tools) => new ResponsesEncoder(routing, tools),
};
