import { PROVIDERS, PROVIDER_SPECS, type Provider, type ProviderSpec } from '../../../domain/providers.js';
import { anthropicMessages } from './anthropic/index.js';
import type { WireFormat } from './format.js';
import { openaiChat } from './openai-chat/index.js';
import { openaiResponses } from './openai-responses/index.js';

const BY_NAME: Record<ProviderSpec['format'], WireFormat> = {
  'openai-chat': openaiChat,
  'openai-responses': openaiResponses,
  'anthropic-messages': anthropicMessages,
};

/** Each provider's wire format, as its description names it. */
export const FORMATS = Object.fromEntries(PROVIDERS.map((p) => [p, BY_NAME[PROVIDER_SPECS[p].format]])) as Record<Provider, WireFormat>;
