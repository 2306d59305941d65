import { ERROR_STATUS } from '../api/openapi.js';
import type { JsonSchema } from '../../lib/schemas/validator.js';
import { chatBody, messagesBody, responsesBody } from '../../lib/routing/schemas.js';
import { nullableString } from '../../lib/schemas/common.js';

const SERVICE_ROUTING: JsonSchema = {
  type: 'object',
  required: ['selected_model', 'reasoning_effort', 'reason', 'conversation_id'],
  properties: {
    selected_model: { type: 'string' },
    reasoning_effort: nullableString,
    reason: { type: 'string', description: 'Why this model: a sentence naming skipped candidates and any fallback.' },
    conversation_id: { type: 'string' },
  },
};

const OPENAI_ERROR: JsonSchema = {
  type: 'object',
  required: ['error'],
  properties: { error: { type: 'object', required: ['message', 'type', 'param', 'code'], properties: { message: { type: 'string' }, type: { type: 'string' }, param: nullableString, code: { type: 'string', description: 'Troupe\u2019s error code.' } } } },
};

const ANTHROPIC_ERROR: JsonSchema = {
  type: 'object',
  required: ['type', 'error'],
  properties: {
    type: { type: 'string', const: 'error' },
    error: {
      type: 'object',
      required: ['type', 'message'],
      properties: { type: { type: 'string' }, message: { type: 'string' }, code: { type: 'string' }, param: { type: 'string' }, details: { type: 'object', properties: { error_code: { type: 'string' } } } },
    },
    request_id: { type: 'string' },
  },
};

const MODEL_LIST: JsonSchema = {
  type: 'object',
  required: ['object', 'data'],
  properties: {
    object: { type: 'string', const: 'list' },
    data: { type: 'array', items: { type: 'object', required: ['id', 'object', 'created', 'owned_by'], properties: { id: { type: 'string' }, object: { type: 'string', const: 'model' }, created: { type: 'integer' }, owned_by: { type: 'string' } } } },
    has_more: { type: 'boolean' },
    first_id: { type: ['string', 'null'] },
    last_id: { type: ['string', 'null'] },
  },
};

const ROUTER_ID = { name: 'router_id', in: 'path', required: true, schema: { type: 'string' }, description: 'A router of the organization; /v1/... uses its default router.' };
/** OpenAPI 3.1 reads an event stream's schema as one event's: the SSE fields as a client's parser yields them (chat sends no `event:`). */
const STREAM = {
  type: 'object',
  required: ['data'],
  properties: { event: { type: 'string' }, data: { type: 'string' }, id: { type: 'string' }, retry: { type: 'integer' } },
  description: 'The vendor\u2019s own SSE stream when the body sets "stream": true (chat ends with `data: [DONE]`); service_routing rides on its final event.',
};

interface Ingress {
  summary: string;
  tag: string;
  body: JsonSchema;
  result: JsonSchema;
  error: JsonSchema;
  xApiKey: boolean;
}

function errors(envelope: JsonSchema, byId: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const codes = [400, 401, 402, ...(byId ? [404] : []), 413, 415, 429];
  for (const c of codes) out[String(c)] = { description: ERROR_STATUS[c], content: { 'application/json': { schema: envelope } } };
  out['502'] = { description: 'No eligible model could answer (each failure is listed).', content: { 'application/json': { schema: envelope } } };
  out.default = { description: 'Unexpected error.', content: { 'application/json': { schema: envelope } } };
  return out;
}

function routeOp(i: Ingress, id: string, byId: boolean): Record<string, unknown> {
  return {
    summary: i.summary,
    tags: [i.tag],
    operationId: id,
    ...(byId ? { parameters: [ROUTER_ID] } : {}),
    requestBody: { required: true, content: { 'application/json': { schema: i.body } } },
    responses: {
      '200': {
        description: 'The selected model\u2019s answer in this format, with service_routing added.',
        headers: { 'X-Conversation-Id': { description: 'The conversation id routing keeps the model by.', schema: { type: 'string' } } },
        content: { 'application/json': { schema: i.result }, 'text/event-stream': { schema: STREAM } },
      },
      ...errors(i.error, byId),
    },
    security: i.xApiKey ? [{ bearer: [] }, { xApiKey: [] }] : [{ bearer: [] }],
  };
}

function modelsOp(id: string, byId: boolean): Record<string, unknown> {
  return {
    summary: 'List service/routing and the router\u2019s candidates, in OpenAI\u2019s list shape.',
    tags: ['models'],
    operationId: id,
    ...(byId ? { parameters: [ROUTER_ID] } : {}),
    responses: { '200': { description: byId ? 'The models.' : 'The models; an empty list while the organization has no default router.', content: { 'application/json': { schema: MODEL_LIST } } }, ...errors(OPENAI_ERROR, byId) },
    security: [{ bearer: [] }, { xApiKey: [] }],
  };
}

function probe(summary: string, content: Record<string, unknown>, id: string): Record<string, unknown> {
  return { summary, tags: ['system'], operationId: id, responses: { '200': { description: 'Success.', content }, default: { description: 'Unexpected error.', content: { 'application/json': { schema: OPENAI_ERROR } } } }, security: [] };
}

/** The routing interface as its own OpenAPI 3.1 document, served at `{routing_url}/openapi.json`. */
export function buildRoutingOpenApi(serverUrl: string): Record<string, unknown> {
  const messages: Ingress = { summary: 'Anthropic Messages, routed.', tag: 'messages', body: messagesBody, result: { type: 'object', description: 'An Anthropic Message; metadata.service_routing says how it was routed.', properties: { metadata: { type: 'object', properties: { service_routing: SERVICE_ROUTING } } } }, error: ANTHROPIC_ERROR, xApiKey: true };
  const chat: Ingress = { summary: 'OpenAI Chat Completions, routed.', tag: 'chat', body: chatBody, result: { type: 'object', description: 'An OpenAI chat completion with service_routing added.', properties: { service_routing: SERVICE_ROUTING } }, error: OPENAI_ERROR, xApiKey: false };
  const responses: Ingress = { summary: 'OpenAI Responses, routed.', tag: 'responses', body: responsesBody, result: { type: 'object', description: 'An OpenAI response with service_routing added.', properties: { service_routing: SERVICE_ROUTING } }, error: OPENAI_ERROR, xApiKey: false };
  return {
    openapi: '3.1.0',
    info: { title: 'Troupe routing interface', version: 'v1', description: 'Anthropic Messages, OpenAI Chat Completions and OpenAI Responses in; the router\u2019s selected model out. The model is always service/routing.', license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' } },
    servers: [{ url: serverUrl }],
    tags: [
      { name: 'messages', description: 'Anthropic\u2019s Messages format; errors in Anthropic\u2019s envelope.' },
      { name: 'chat', description: 'OpenAI\u2019s Chat Completions format; errors in OpenAI\u2019s envelope.' },
      { name: 'responses', description: 'OpenAI\u2019s Responses format; errors in OpenAI\u2019s envelope.' },
      { name: 'models', description: 'What a router may route to.' },
      { name: 'system', description: 'Liveness, readiness, metrics and this document.' },
    ],
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'A routing key: Authorization: Bearer tr_rk_...' },
        xApiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'A routing key the way Anthropic clients send it (Messages paths and the models list).' },
      },
    },
    paths: {
      '/v1/messages': { post: routeOp(messages, 'postMessages', false) },
      '/{router_id}/messages': { post: routeOp(messages, 'postRouterMessages', true) },
      '/v1/chat/completions': { post: routeOp(chat, 'postChatCompletions', false) },
      '/{router_id}/chat/completions': { post: routeOp(chat, 'postRouterChatCompletions', true) },
      '/v1/responses': { post: routeOp(responses, 'postResponses', false) },
      '/{router_id}/v1/responses': { post: routeOp(responses, 'postRouterResponses', true) },
      '/v1/models': { get: modelsOp('listModels', false) },
      '/{router_id}/models': { get: modelsOp('listRouterModels', true) },
      '/{router_id}/v1/models': { get: modelsOp('listRouterModelsV1', true) },
      '/healthz': { get: probe('Liveness.', { 'application/json': { schema: { type: 'object', required: ['status'], properties: { status: { type: 'string' }, role: { type: 'string' } } } } }, 'getHealthz') },
      '/readyz': { get: { ...probe('Readiness: 503 while shutting down.', { 'application/json': { schema: { type: 'object', required: ['status'], properties: { status: { type: 'string' } } } } }, 'getReadyz'), responses: { '200': { description: 'Ready.', content: { 'application/json': { schema: { type: 'object', required: ['status'], properties: { status: { type: 'string' } } } } } }, '503': { description: ERROR_STATUS[503], content: { 'application/json': { schema: OPENAI_ERROR } } }, default: { description: 'Unexpected error.', content: { 'application/json': { schema: OPENAI_ERROR } } } } } },
      '/metrics': { get: probe('Prometheus metrics of this process.', { 'text/plain': { schema: { type: 'string' } } }, 'getMetrics') },
      '/openapi.json': { get: probe('This document.', { 'application/json': { schema: { type: 'object', required: ['openapi', 'info', 'paths'], properties: { openapi: { type: 'string' }, info: { type: 'object' }, paths: { type: 'object' } } } } }, 'getOpenApi') },
    },
  };
}
