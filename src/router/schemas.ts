import { EFFORTS } from '../llm/types.js';
import type { JsonSchema } from '../schemas/validator.js';

/**
 * Request bodies of the three routing endpoints. Only what routing and
 * translation rely on is checked; vendors add fields often, so unknown
 * fields pass through.
 */
const model = { type: 'string', const: 'service/routing', description: 'Always service/routing; the router picks the model.' };
const textOrArray = { anyOf: [{ type: 'string' }, { type: 'array' }] };
const RESPONSE_EFFORTS = ['none', ...EFFORTS.filter((e) => e !== 'off')];

export const messagesBody: JsonSchema = {
  type: 'object',
  required: ['model', 'max_tokens', 'messages'],
  properties: {
    model,
    max_tokens: { type: 'integer', minimum: 1 },
    messages: {
      type: 'array',
      minItems: 1,
      items: { type: 'object', required: ['role', 'content'], properties: { role: { type: 'string', enum: ['user', 'assistant'] }, content: textOrArray } },
    },
    system: textOrArray,
    stream: { type: 'boolean' },
    tools: { type: 'array', items: { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1 } } } },
    thinking: { type: 'object', required: ['type'], properties: { type: { type: 'string', enum: ['enabled', 'disabled'] }, budget_tokens: { type: 'integer', minimum: 1 } } },
  },
};

export const chatBody: JsonSchema = {
  type: 'object',
  required: ['model', 'messages'],
  properties: {
    model,
    messages: {
      type: 'array',
      minItems: 1,
      items: { type: 'object', required: ['role'], properties: { role: { type: 'string', enum: ['system', 'developer', 'user', 'assistant', 'tool'] } } },
    },
    stream: { type: 'boolean' },
    tools: {
      type: 'array',
      items: { type: 'object', required: ['type', 'function'], properties: { type: { type: 'string', const: 'function' }, function: { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1 } } } } },
    },
    reasoning_effort: { type: 'string', enum: [...EFFORTS] },
    max_tokens: { type: 'integer', minimum: 1 },
    max_completion_tokens: { type: 'integer', minimum: 1 },
  },
};

/** Checked apart from the body so that an error names the item rather than the anyOf. */
export const responsesInputItems: JsonSchema = {
  type: 'array',
  minItems: 1,
  items: {
    type: 'object',
    properties: {
      type: { type: 'string' },
      reasoning: { type: 'object', properties: { effort: { type: 'string', enum: RESPONSE_EFFORTS } } },
    },
    if: { properties: { type: { const: 'configuration_update' } }, required: ['type'] },
    then: { required: ['reasoning'], properties: { reasoning: { type: 'object', required: ['effort'], properties: { effort: { type: 'string' } } } } },
  },
};

export const responsesBody: JsonSchema = {
  type: 'object',
  required: ['model', 'input'],
  properties: {
    model,
    input: { anyOf: [{ type: 'string' }, { type: 'array' }] },
    instructions: { type: 'string' },
    stream: { type: 'boolean' },
    tools: { type: 'array', items: { type: 'object', required: ['type'], properties: { type: { type: 'string', enum: ['function', 'custom', 'namespace'] } } } },
    reasoning: { type: 'object', properties: { effort: { type: 'string', enum: RESPONSE_EFFORTS } } },
    max_output_tokens: { type: 'integer', minimum: 1 },
  },
};
