import { allowedDomainProblem, MAX_ALLOWED_DOMAINS, normalizeHost } from '../../domain/allowed-domains.js';
import { InvalidRequestError } from '../../domain/errors.js';
import { nameString } from '../../lib/schemas/common.js';
import { check, type JsonSchema } from '../../lib/schemas/validator.js';
import { TOOL_PERMISSIONS, type Manifest } from '../../domain/agent.js';
import { isProvider, OPTION_PROVIDERS, PROVIDERS } from '../../domain/providers.js';
import { manifestPath } from '../../lib/archive/paths.js';
import { MCP_SERVER_NAME, mcpServerNameProblem } from '../../domain/mcp-tools.js';

export const SUPPORTED_SDK = 'troupe-js@1';
export const SECRET_NAME = '^[A-Z_][A-Z0-9_]*$';
export const TOOL_NAME = '^[A-Za-z0-9_-]{1,64}$';
export const LLM_ID = '^[A-Za-z0-9_.-]{1,64}$';
/** `<file>:<variable>`: a module path, then a JS identifier naming its export. */
export const ENTRYPOINT = '^[^:]+:[A-Za-z_$][A-Za-z0-9_$]*$';
export const DEFAULT_TOOL_TIMEOUT_SECONDS = 60;
export const MAX_TOOL_TIMEOUT_SECONDS = 3600;

const path = { type: 'string', minLength: 1, maxLength: 1024 };

const llmModel = { type: 'string', minLength: 1, maxLength: 200 };

const llmOption: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'provider'],
  properties: {
    id: { type: 'string', pattern: LLM_ID },
    provider: { type: 'string', enum: [...OPTION_PROVIDERS] },
    model: llmModel,
    base_url: { type: 'string', format: 'uri', pattern: '^https?://', maxLength: 2048 },
    api_key_credential: { type: 'string', pattern: SECRET_NAME, maxLength: 128 },
    router_id: { type: 'string', minLength: 1, maxLength: 128 },
    script: path,
    params: { type: 'object' },
    input_price: { type: 'number', minimum: 0, description: 'Per million input tokens; with output_price, usage reports a cost.' },
    output_price: { type: 'number', minimum: 0, description: 'Per million output tokens.' },
    currency: { type: 'string', pattern: '^[A-Z]{3}$', description: 'ISO 4217 code of the prices; default USD.' },
  },
  dependentRequired: { input_price: ['output_price'], output_price: ['input_price'], currency: ['input_price'] },
  // Written here rather than only in checkLlmOptions, so /v1/openapi.json shows which provider needs which field.
  allOf: [
    { if: { properties: { provider: { const: 'scripted' } } }, then: { properties: { script: path }, required: ['script'] } },
    { if: { properties: { provider: { enum: [...PROVIDERS] } } }, then: { properties: { model: llmModel }, required: ['model'] } },
  ],
};

const tool: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'path'],
  properties: {
    name: { type: 'string', pattern: TOOL_NAME },
    path,
    kind: { type: 'string', enum: ['external', 'custom'], default: 'custom' },
    timeout_seconds: { type: 'integer', minimum: 1, maximum: MAX_TOOL_TIMEOUT_SECONDS, default: DEFAULT_TOOL_TIMEOUT_SECONDS },
    definition: path,
    permission: { type: 'string', enum: [...TOOL_PERMISSIONS], description: '`always_ask`: each call waits for a `user.tool_confirmation` (allow or deny) before it runs, at most timeout_seconds. Default `always_allow`.' },
  },
};

/** A remote MCP server (docs/mcp.md); its URL is checked by the SSRF guard at publish (publish-from-snapshot.ts). */
const mcpServer: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'url'],
  properties: {
    name: { type: 'string', pattern: MCP_SERVER_NAME, description: 'Its tools reach the model as `mcp__<name>__<tool>`.' },
    url: { type: 'string', minLength: 1, maxLength: 2048, description: 'The Streamable HTTP endpoint; https (http only where private networks are allowed).' },
    credential: { type: 'string', pattern: SECRET_NAME, maxLength: 128, description: 'An org credential sent as `Authorization: Bearer`.' },
    allowed_tools: { type: 'array', maxItems: 128, uniqueItems: true, items: { type: 'string', minLength: 1, maxLength: 128 }, description: 'Only these of its tools; all when absent.' },
    permission: { type: 'string', enum: [...TOOL_PERMISSIONS], description: 'Of each of its tools; default `always_ask`.' },
    timeout_seconds: { type: 'integer', minimum: 1, maximum: MAX_TOOL_TIMEOUT_SECONDS, default: DEFAULT_TOOL_TIMEOUT_SECONDS },
  },
};

/** The manifest: the spec's fields plus DESIGN §8 `llm_options`. Unknown fields are refused so typos surface. */
export const manifestSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'sdk', 'entrypoint', 'llm_options'],
  properties: {
    name: { ...nameString(200), minLength: 1 },
    description: { type: 'string', maxLength: 2000 },
    version: { type: 'string', maxLength: 100 },
    sdk: { type: 'string', const: SUPPORTED_SDK },
    entrypoint: { type: 'string', maxLength: 1100, pattern: ENTRYPOINT },
    sandbox: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        secrets: { type: 'array', maxItems: 100, uniqueItems: true, default: [], items: { type: 'string', pattern: SECRET_NAME, maxLength: 128 } },
        internet_access: { type: 'boolean', default: false },
        allowed_domains: {
          type: 'array',
          maxItems: MAX_ALLOWED_DOMAINS,
          items: { type: 'string', minLength: 1, maxLength: 255 },
          description: 'Hosts a tool with internet access may reach: `api.example.com` (that name) or `*.example.com` (every name below it). Absent: any public host.',
        },
      },
    },
    custom_tools: { type: 'array', maxItems: 128, default: [], items: tool },
    llm_options: { type: 'array', minItems: 1, maxItems: 32, items: llmOption },
    mcp_servers: { type: 'array', maxItems: 16, items: mcpServer },
  },
};

function bad(message: string, param: string, code = 'invalid_manifest'): never {
  throw new InvalidRequestError(message, param, code);
}

function canonical(ref: string, param: string): string {
  const p = manifestPath(ref);
  if (p === null) bad(`${param} must be a relative path inside the archive; got ${JSON.stringify(ref)}.`, param);
  return p;
}

function checkTools(m: Manifest): void {
  const seen = new Set<string>();
  m.custom_tools.forEach((t, i) => {
    const param = `manifest.custom_tools[${i}]`;
    if (seen.has(t.name)) bad(`Tool name ${t.name} is used twice; tool names must be unique.`, `${param}.name`, 'duplicate_tool_name');
    seen.add(t.name);
    t.path = canonical(t.path, `${param}.path`);
    if (t.definition !== undefined) {
      if (t.kind === 'external') bad('An external tool is described by its path; definition is for custom tools only.', `${param}.definition`);
      t.definition = canonical(t.definition, `${param}.definition`);
    }
  });
}

/** Each entry a host name or `*.` wildcard (a 400 naming its index), kept lower case and without a trailing dot. */
function checkAllowedDomains(m: Manifest): void {
  const list = m.sandbox.allowed_domains;
  if (list === undefined) return;
  const seen = new Set<string>();
  m.sandbox.allowed_domains = list.map((entry, i) => {
    const param = `manifest.sandbox.allowed_domains[${i}]`;
    const problem = allowedDomainProblem(entry);
    if (problem) bad(`${param} ${problem}; got ${JSON.stringify(entry)}.`, param, 'invalid_allowed_domain');
    const name = normalizeHost(entry);
    if (seen.has(name)) bad(`${param} repeats ${name}.`, param, 'invalid_allowed_domain');
    seen.add(name);
    return name;
  });
}

function checkLlmOptions(m: Manifest): void {
  const seen = new Set<string>();
  m.llm_options.forEach((o, i) => {
    const param = `manifest.llm_options[${i}]`;
    if (seen.has(o.id)) bad(`LLM option id ${o.id} is used twice; ids must be unique.`, `${param}.id`, 'duplicate_llm_id');
    seen.add(o.id);
    if (o.provider === 'scripted') {
      if (o.script === undefined) bad('A scripted LLM option needs script: the path of its script file.', `${param}.script`);
      o.script = canonical(o.script, `${param}.script`);
    } else {
      if (o.script !== undefined) bad('script applies only to provider "scripted".', `${param}.script`);
      if (isProvider(o.provider) && o.model === undefined) bad(`Provider ${o.provider} needs a model.`, `${param}.model`);
    }
  });
}

function checkMcpServers(m: Manifest): void {
  const seen = new Set<string>();
  m.mcp_servers?.forEach((server, i) => {
    const param = `manifest.mcp_servers[${i}].name`;
    const problem = mcpServerNameProblem(server.name);
    if (problem) bad(`${param} ${problem}; got ${JSON.stringify(server.name)}.`, param);
    if (seen.has(server.name)) bad(`MCP server name ${server.name} is used twice; names must be unique.`, param, 'duplicate_mcp_server_name');
    seen.add(server.name);
  });
}

/**
 * Validates a manifest and returns it with defaults applied and every path in
 * canonical form; throws a 400 naming the offending field.
 */
export function validateManifest(raw: unknown): Manifest {
  const m = check<Manifest>(manifestSchema, structuredClone(raw), 'manifest');
  const sep = m.entrypoint.lastIndexOf(':');
  const file = canonical(m.entrypoint.slice(0, sep), 'manifest.entrypoint');
  m.entrypoint = `${file}:${m.entrypoint.slice(sep + 1)}`;
  checkTools(m);
  checkAllowedDomains(m);
  checkLlmOptions(m);
  checkMcpServers(m);
  return m;
}

/** The module file half of a validated entrypoint. */
export function entrypointFile(m: Manifest): string {
  return m.entrypoint.slice(0, m.entrypoint.lastIndexOf(':'));
}
