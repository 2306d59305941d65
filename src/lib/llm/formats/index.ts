import type { Provider } from '../types.js';
import { anthropicMessages } from './anthropic/index.js';
import type { WireFormat } from './format.js';
import { openaiChat } from './openai-chat/index.js';
import { openaiResponses } from './openai-responses/index.js';

export const FORMATS: Record<Provider, WireFormat> = {
  openai: openaiChat,
  'openai-responses': openaiResponses,
  anthropic: anthropicMessages,
};

export type { RoutingInfo, StreamDecoder, StreamEncoder, WireFormat } from './format.js';
