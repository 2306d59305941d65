import { DROPPABLE_PARAMS, EFFORTS, PROVIDERS } from '../../../../domain/providers.js';
import type { JsonSchema } from '../../../../lib/schemas/validator.js';
import { CREDENTIAL_NAME } from '../credentials/schema.js';
import { NO_CONTROL_CHARACTERS, time } from '../../../../lib/schemas/common.js';
import { listResponse } from '../../pagination.js';

export const ROUTER_ID = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$';

const candidate: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['model', 'provider', 'upstream_model', 'api_key_credential'],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 200, pattern: NO_CONTROL_CHARACTERS, description: 'The name clients see in service_routing.selected_model, e.g. openai/gpt-4.1-mini.' },
    provider: { type: 'string', enum: [...PROVIDERS] },
    upstream_model: { type: 'string', minLength: 1, maxLength: 200, pattern: NO_CONTROL_CHARACTERS, description: 'The model name sent to the provider.' },
    base_url: { type: 'string', format: 'uri', pattern: '^https?://', description: 'Defaults to the provider\u2019s public endpoint.' },
    api_key_credential: { type: 'string', pattern: CREDENTIAL_NAME, maxLength: 128, description: 'Name of a stored credential holding the provider key.' },
    reasoning_efforts: { type: 'array', items: { type: 'string', enum: [...EFFORTS] }, uniqueItems: true, default: [], description: 'Levels the model runs at; a request naming another level skips it.' },
    tools: { type: 'boolean', default: true },
    thinking: { type: 'boolean', default: false },
    context_window: { type: 'integer', minimum: 1, default: 128000 },
    input_price: { type: 'number', minimum: 0, default: 0, description: 'Per million input tokens.' },
    output_price: { type: 'number', minimum: 0, default: 0, description: 'Per million output tokens.' },
    currency: { type: 'string', pattern: '^[A-Z]{3}$', default: 'USD', description: 'ISO 4217 code of input_price and output_price; usage reports cost in it.' },
    configuration_update: { type: 'boolean', default: false, description: 'openai-responses only: forward configuration_update items to this model.' },
    drop_params: { type: 'array', items: { type: 'string', enum: [...DROPPABLE_PARAMS] }, uniqueItems: true, description: 'Request parameters left out for this model, which refuses them (e.g. temperature, top_p and top_k for Claude Opus 4.7 and later).' },
    thinking_mode: { type: 'string', enum: ['budget', 'adaptive'], description: 'anthropic only: how reasoning effort is sent. budget (when absent): an extended-thinking token budget; adaptive: adaptive thinking with output_config.effort, for models that refuse a budget.' },
  },
};

export const putRouterBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['candidates'],
  properties: {
    default: { type: 'boolean', default: false },
    policy: { type: 'string', enum: ['priority', 'cheapest'], default: 'priority' },
    prefer_low_latency: { type: 'boolean', default: true, description: 'Among candidates the policy leaves equal (a cheapest router\u2019s price ties), try the one with the lower recent time to first token (or answer time) first.' },
    candidates: { type: 'array', minItems: 1, maxItems: 32, items: candidate },
  },
};

export const routerResponse: JsonSchema = {
  type: 'object',
  required: ['router_id', 'default', 'policy', 'candidates', 'created_at', 'updated_at'],
  properties: {
    router_id: { type: 'string' },
    default: { type: 'boolean' },
    policy: { type: 'string', enum: ['priority', 'cheapest'] },
    prefer_low_latency: { type: 'boolean' },
    candidates: { type: 'array', items: candidate },
    created_at: time,
    updated_at: time,
  },
};

export const routerListResponse: JsonSchema = listResponse('routers', routerResponse);
