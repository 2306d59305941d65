import { EFFORTS } from '../../domain/providers.js';
import type { JsonSchema } from '../schemas/validator.js';

/**
 * Request bodies of the three routing endpoints, checked down to the parts
 * the translators read (message content, system blocks, tool calls, tool
 * results, input items), so a client's mistake is a 400 naming the field and
 * the translators can trust what they get. Vendors add fields and block types
 * often: unknown fields pass through, and a part or item of a type the router
 * does not know is only required to be an object with a string `type` (the
 * translators skip it, as before). A known type is checked against the shape
 * the vendor documents; a shape the router cannot translate (an image by file
 * id) is refused rather than sent on as nonsense.
 */
const model = { type: 'string', const: 'service/routing', description: 'Always service/routing; the router picks the model.' };
const RESPONSE_EFFORTS = ['none', ...EFFORTS.filter((e) => e !== 'off')];
const str = { type: 'string' };
const name = { type: 'string', minLength: 1 };
/** OpenAI takes null for an unset sampling knob; Anthropic does not. */
const sampling = { temperature: { type: ['number', 'null'] }, top_p: { type: ['number', 'null'] } };
const arrayOf = (items: JsonSchema): JsonSchema => ({ type: 'array', items });
/** A string, or an array of `items` (the vendors' content fields). A wrong type is told as "must be a string or an array". */
const stringOr = (items: JsonSchema): JsonSchema => ({ anyOf: [str, arrayOf(items)] });

/**
 * An object of a union tagged by `type`: each case's schema applies when `type` is that case, any other
 * `type` passes. The `if`s cost one comparison each, and an error names the field inside the case.
 */
function tagged(cases: Record<string, JsonSchema>, opts: { tag?: JsonSchema; tagRequired?: boolean } = {}): JsonSchema {
  return {
    type: 'object',
    ...(opts.tagRequired === false ? {} : { required: ['type'] }),
    properties: { type: opts.tag ?? str },
    allOf: Object.entries(cases).map(([t, then]) => ({ if: { properties: { type: { const: t } }, required: ['type'] }, then })),
  };
}
const fields = (required: string[], properties: Record<string, JsonSchema>): JsonSchema => ({ required, properties });
const textPart = fields(['text'], { text: str });
const anyObject = { type: 'object' };
const flag = { type: ['boolean', 'null'] };

// Anthropic Messages
const anthropicImageSource = tagged(
  { base64: fields(['media_type', 'data'], { media_type: str, data: str }), url: fields(['url'], { url: str }) },
  { tag: { type: 'string', enum: ['base64', 'url'], description: 'File sources (Files API ids) cannot be sent to another provider.' } },
);
const anthropicInner = { text: textPart, image: fields(['source'], { source: anthropicImageSource }) };
const anthropicBlock = tagged({
  ...anthropicInner,
  tool_use: fields(['id', 'name', 'input'], { id: str, name, input: { type: 'object' } }),
  tool_result: fields(['tool_use_id'], { tool_use_id: str, content: stringOr(tagged(anthropicInner)), is_error: { type: 'boolean' } }),
});

export const messagesBody: JsonSchema = {
  type: 'object',
  required: ['model', 'max_tokens', 'messages'],
  properties: {
    model,
    max_tokens: { type: 'integer', minimum: 1 },
    messages: {
      type: 'array',
      minItems: 1,
      items: { type: 'object', required: ['role', 'content'], properties: { role: { type: 'string', enum: ['user', 'assistant', 'system'] }, content: stringOr(anthropicBlock) } },
    },
    system: stringOr(tagged({ text: textPart })),
    stream: { type: 'boolean' },
    tools: { type: 'array', items: { type: 'object', required: ['name'], properties: { name } } },
    thinking: { type: 'object', required: ['type'], properties: { type: { type: 'string', enum: ['enabled', 'adaptive', 'disabled'] }, budget_tokens: { type: 'integer', minimum: 1 } } },
    tool_choice: { ...tagged({ tool: fields(['name'], { name }) }), properties: { type: str, disable_parallel_tool_use: { type: 'boolean' } } },
    output_config: { type: 'object', properties: { format: { ...tagged({ json_schema: fields(['schema'], { schema: anyObject }) }), type: ['object', 'null'] } } },
    temperature: { type: 'number' },
    top_p: { type: 'number' },
    stop_sequences: arrayOf(str),
  },
};

// OpenAI Chat Completions
const chatContent = stringOr(tagged({ text: textPart, image_url: fields(['image_url'], { image_url: { type: 'object', required: ['url'], properties: { url: str } } }) }));
const chatToolCall: JsonSchema = {
  type: 'object',
  required: ['id', 'function'],
  properties: {
    id: str,
    type: { type: 'string', const: 'function' },
    function: { type: 'object', required: ['name'], properties: { name, arguments: str } },
  },
};
const whenRole = (roles: string[], then: JsonSchema): JsonSchema => ({ if: { properties: { role: { enum: roles } } }, then });

export const chatBody: JsonSchema = {
  type: 'object',
  required: ['model', 'messages'],
  properties: {
    model,
    messages: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['role'],
        properties: { role: { type: 'string', enum: ['system', 'developer', 'user', 'assistant', 'tool'] } },
        allOf: [
          whenRole(['system', 'developer', 'user'], fields(['content'], { content: chatContent })),
          whenRole(['tool'], fields(['tool_call_id', 'content'], { tool_call_id: str, content: chatContent })),
          whenRole(['assistant'], fields([], { content: { anyOf: [...(chatContent.anyOf as JsonSchema[]), { type: 'null' }] }, tool_calls: arrayOf(chatToolCall) })),
        ],
      },
    },
    stream: { type: 'boolean' },
    tools: {
      type: 'array',
      items: { type: 'object', required: ['type', 'function'], properties: { type: { type: 'string', const: 'function' }, function: { type: 'object', required: ['name'], properties: { name } } } },
    },
    reasoning_effort: { type: 'string', enum: [...EFFORTS] },
    response_format: tagged({ json_schema: fields(['json_schema'], { json_schema: { type: 'object', required: ['name'], properties: { name, schema: anyObject, strict: flag } } }) }),
    parallel_tool_calls: flag,
    max_tokens: { type: 'integer', minimum: 1 },
    max_completion_tokens: { type: 'integer', minimum: 1 },
    ...sampling,
    stop: { anyOf: [str, arrayOf(str), { type: 'null' }] },
  },
};

// OpenAI Responses
const responsesContent = stringOr(
  tagged({
    input_text: textPart,
    output_text: textPart,
    text: textPart,
    input_image: fields(['image_url'], { image_url: { type: 'string', description: 'A URL or data URL; images by file_id cannot be sent to another provider.' } }),
  }),
);
const toolOutput = fields(['call_id', 'output'], { call_id: str, output: responsesContent });
const inputItem: JsonSchema = {
  type: 'object',
  properties: {
    type: str,
    reasoning: { type: 'object', properties: { effort: { type: 'string', enum: RESPONSE_EFFORTS } } },
  },
  allOf: [
    {
      // A message is `type: message`, or an item with a role and no type (EasyInputMessage).
      if: { anyOf: [{ properties: { type: { const: 'message' } }, required: ['type'] }, { properties: { type: { const: 'message' }, role: true }, required: ['role'] }] },
      then: fields(['role', 'content'], { role: { type: 'string', enum: ['user', 'assistant', 'system', 'developer'] }, content: responsesContent }),
    },
    { if: { properties: { type: { const: 'function_call' } }, required: ['type'] }, then: fields(['call_id', 'name'], { call_id: str, name, namespace: str, arguments: str }) },
    { if: { properties: { type: { const: 'custom_tool_call' } }, required: ['type'] }, then: fields(['call_id', 'name', 'input'], { call_id: str, name, namespace: str, input: str }) },
    { if: { properties: { type: { enum: ['function_call_output', 'custom_tool_call_output'] } }, required: ['type'] }, then: toolOutput },
    {
      if: { properties: { type: { const: 'configuration_update' } }, required: ['type'] },
      then: { required: ['reasoning'], properties: { reasoning: { type: 'object', required: ['effort'], properties: { effort: str } } } },
    },
  ],
};
const namedTool: JsonSchema = { if: { properties: { type: { enum: ['function', 'custom'] } }, required: ['type'] }, then: fields(['name'], { name }) };
const responsesTool = (types: string[], more: JsonSchema[] = []): JsonSchema => ({ type: 'object', required: ['type'], properties: { type: { type: 'string', enum: types } }, allOf: [namedTool, ...more] });
/** Namespaced tools hold function and custom tools, one level deep. */
const namespaceTool: JsonSchema = { if: { properties: { type: { const: 'namespace' } }, required: ['type'] }, then: fields(['name', 'tools'], { name, tools: arrayOf(responsesTool(['function', 'custom'])) }) };

export const responsesBody: JsonSchema = {
  type: 'object',
  required: ['model', 'input'],
  properties: {
    model,
    input: { anyOf: [str, { type: 'array', minItems: 1, items: inputItem }] },
    instructions: str,
    stream: { type: 'boolean' },
    tools: arrayOf(responsesTool(['function', 'custom', 'namespace'], [namespaceTool])),
    reasoning: { type: 'object', properties: { effort: { type: 'string', enum: RESPONSE_EFFORTS } } },
    text: { type: 'object', properties: { format: tagged({ json_schema: fields(['name', 'schema'], { name, schema: anyObject, strict: flag }) }) } },
    parallel_tool_calls: flag,
    max_output_tokens: { type: 'integer', minimum: 1 },
    ...sampling,
  },
};
