/**
 * The upstream model APIs Troupe speaks, each described once. The manifest's and the router's provider enums, the
 * `Provider` type, the LLM client's URL, path and headers and the recorded usage are all read from this table, so a
 * provider is added (or a fact about one corrected) here and nowhere else.
 */

/** How a provider is told who is calling: the header the key goes in, and the scheme in front of it (none: the bare key). */
export interface ProviderAuth {
  header: string;
  scheme?: 'Bearer';
}

export interface ProviderSpec {
  /** The wire format its requests and answers are written in (src/lib/llm/formats). */
  format: 'openai-chat' | 'openai-responses' | 'anthropic-messages';
  /** Where calls go when the llm option or router candidate sets no base_url. */
  baseUrl: string;
  /** Appended to the base URL's path. */
  path: string;
  auth: ProviderAuth;
  /** Sent on every call besides content type and auth (API version pins). */
  headers: Readonly<Record<string, string>>;
  /**
   * The input-token figure recorded and billed: what the provider itself calls its input tokens. `all`: every prompt
   * token, cached ones included (OpenAI's `prompt_tokens`); `uncached`: without cache reads and writes (Anthropic's
   * `input_tokens`). Usage records keep this meaning until pricing cached tokens apart is decided.
   */
  recordedInput: 'all' | 'uncached';
  capabilities: {
    /** Understands responses `configuration_update` input items (router candidates may opt in). */
    configurationUpdate: boolean;
    /** Reasoning effort can go as an extended-thinking budget or adaptive thinking (router `thinking_mode`). */
    thinkingMode: boolean;
  };
}

const OPENAI_BASE_URL = 'https://api.openai.com/v1';
const BEARER: ProviderAuth = { header: 'authorization', scheme: 'Bearer' };

/** In the order the API's enums list them. */
export const PROVIDER_SPECS = {
  openai: {
    format: 'openai-chat',
    baseUrl: OPENAI_BASE_URL,
    path: '/chat/completions',
    auth: BEARER,
    headers: {},
    recordedInput: 'all',
    capabilities: { configurationUpdate: false, thinkingMode: false },
  },
  'openai-responses': {
    format: 'openai-responses',
    baseUrl: OPENAI_BASE_URL,
    path: '/responses',
    auth: BEARER,
    headers: {},
    recordedInput: 'all',
    capabilities: { configurationUpdate: true, thinkingMode: false },
  },
  anthropic: {
    format: 'anthropic-messages',
    baseUrl: 'https://api.anthropic.com',
    path: '/v1/messages',
    auth: { header: 'x-api-key' },
    headers: { 'anthropic-version': '2023-06-01' },
    recordedInput: 'uncached',
    capabilities: { configurationUpdate: false, thinkingMode: true },
  },
} as const satisfies Record<string, ProviderSpec>;

export type Provider = keyof typeof PROVIDER_SPECS;
export const PROVIDERS = Object.keys(PROVIDER_SPECS) as readonly Provider[];

/** What an llm option may name: a provider called directly, the org's router (`routing`), or a script (`scripted`). */
export const OPTION_PROVIDERS = [...PROVIDERS, 'routing', 'scripted'] as const;
export type OptionProvider = (typeof OPTION_PROVIDERS)[number];

export const DEFAULT_BASE_URL = Object.fromEntries(PROVIDERS.map((p) => [p, PROVIDER_SPECS[p].baseUrl])) as Readonly<Record<Provider, string>>;

export const EFFORTS = ['off', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;
export type Effort = (typeof EFFORTS)[number];

/** Request parameters a router candidate can be told to leave out (`drop_params`), as the models that refuse them name them. */
export const DROPPABLE_PARAMS = ['temperature', 'top_p', 'top_k', 'stop', 'parallel_tool_calls'] as const;
export type DroppableParam = (typeof DROPPABLE_PARAMS)[number];

/** The providers that have a capability, in table order (router candidates' provider-specific fields name them). */
export function providersWith(capability: keyof ProviderSpec['capabilities']): Provider[] {
  return PROVIDERS.filter((p) => PROVIDER_SPECS[p].capabilities[capability]);
}

/** A provider of the table (called directly), as opposed to `routing`, `scripted` or a name no version should hold. */
export function isProvider(name: string): name is Provider {
  return Object.hasOwn(PROVIDER_SPECS, name);
}
