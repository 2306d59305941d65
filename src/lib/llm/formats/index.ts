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

// Defined in format.ts; import them from there. Re-exported only for src/lib/routing, which is being rewritten and
// still reads them here: drop this line when it imports format.ts.
export type { RoutingInfo, WireFormat } from './format.js';
