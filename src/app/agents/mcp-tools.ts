import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { InvalidRequestError, UnprocessableError, ensureError } from '../../domain/errors.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../domain/json-depth.js';
import { mcpToolName } from '../../domain/mcp-tools.js';
import type { Manifest, McpServerEntry, ToolDef } from '../../domain/agent.js';
import { UnsafeUrlError } from '../../lib/net/url-guard.js';
import type { McpConnector, McpEndpoint } from '../../lib/mcp/connector.js';
import { compileToolSchema, TOOL_SCHEMA_MAX_BYTES } from './tool-definitions.js';
import { TOOL_NAME } from './manifest.js';

/** What publish needs to list a manifest's MCP servers: the connector, and the org's credentials by name. */
export interface McpPublishPorts {
  connector: McpConnector;
  reveal(orgId: string, name: string): Promise<string | null>;
}

/** As many tools as a manifest may have custom ones, per server; the listing itself is read up to a byte cap. */
const MAX_TOOLS_PER_SERVER = 128;
const MAX_DESCRIPTION = 10_000;
/** Listing is one handshake and a page or two; a server slower than this at publish is not ready to serve turns. */
const LIST_TIMEOUT_MS = 15_000;

/** The bearer a server's credential names, or a 400 naming the field when the org has no such credential. */
export async function serverBearer(ports: Pick<McpPublishPorts, 'reveal'>, orgId: string, server: McpServerEntry, param: string): Promise<string | undefined> {
  if (server.credential === undefined) return undefined;
  const value = await ports.reveal(orgId, server.credential);
  if (value === null) throw new InvalidRequestError(`MCP server ${server.name} names credential ${server.credential}, which the org does not have.`, `${param}.credential`, 'credential_not_found');
  return value;
}

/**
 * The tools of every MCP server of the manifest, as the version records them: listed now (filtered by
 * `allowed_tools`), named `mcp__<server>__<tool>`, with input schemas compiled as a custom tool's are, so a
 * server that offers a bad or oversized schema fails the publish (4xx naming the server and tool) rather than a
 * turn. The URL passes the SSRF guard first; the credential's value is used for the listing and not kept.
 */
export async function listMcpTools(ports: McpPublishPorts | undefined, orgId: string, m: Manifest): Promise<ToolDef[]> {
  const servers = m.mcp_servers ?? [];
  if (servers.length === 0) return [];
  if (!ports) throw new UnprocessableError('This deployment does not reach MCP servers.', 'mcp_unavailable', 'manifest.mcp_servers');
  const taken = new Set(m.custom_tools.map((t) => t.name));
  const out: ToolDef[] = [];
  for (const [i, server] of servers.entries()) {
    const param = `manifest.mcp_servers[${i}]`;
    const endpoint: McpEndpoint = { url: server.url, bearer: await serverBearer(ports, orgId, server, param), param: `${param}.url` };
    await ports.connector.check(endpoint);
    let listed: Tool[];
    try {
      listed = await ports.connector.listTools(endpoint, LIST_TIMEOUT_MS, MAX_TOOLS_PER_SERVER);
    } catch (e) {
      if (e instanceof UnsafeUrlError) throw e;
      throw new UnprocessableError(`MCP server ${server.name} could not list its tools: ${ensureError(e).message}`, 'mcp_server_unavailable', `${param}.url`);
    }
    for (const tool of chosen(server, listed, param)) {
      const def = toolDef(server, tool, param);
      if (taken.has(def.name)) throw new InvalidRequestError(`Tool name ${def.name} is used twice; tool names must be unique.`, param, 'duplicate_tool_name');
      taken.add(def.name);
      out.push(def);
    }
  }
  return out;
}

/** The listed tools `allowed_tools` keeps (each must be listed), in the server's order. */
function chosen(server: McpServerEntry, listed: Tool[], param: string): Tool[] {
  if (!server.allowed_tools) return listed;
  const names = new Set(listed.map((t) => t.name));
  server.allowed_tools.forEach((name, j) => {
    if (!names.has(name)) throw new InvalidRequestError(`MCP server ${server.name} has no tool named ${JSON.stringify(name)}.`, `${param}.allowed_tools[${j}]`, 'mcp_tool_not_found');
  });
  const keep = new Set(server.allowed_tools);
  return listed.filter((t) => keep.has(t.name));
}

function toolDef(server: McpServerEntry, tool: Tool, param: string): ToolDef {
  const name = mcpToolName(server.name, tool.name);
  if (!new RegExp(TOOL_NAME).test(name)) {
    throw new InvalidRequestError(`MCP server ${server.name} offers tool ${JSON.stringify(tool.name)}, whose name ${JSON.stringify(name)} is not a usable tool name (${TOOL_NAME}); leave it out with allowed_tools.`, param, 'invalid_mcp_tool');
  }
  return {
    name,
    kind: 'custom',
    path: `mcp:${server.name}/${tool.name}`,
    timeout_seconds: server.timeout_seconds,
    description: typeof tool.description === 'string' ? tool.description.slice(0, MAX_DESCRIPTION) : null,
    input_schema: inputSchema(tool, name, param),
    output_schema: null,
    permission: server.permission ?? 'always_ask',
    mcp: { server: server.name, tool: tool.name },
  };
}

/**
 * The tool's input schema, held to a custom tool's limits: size, depth, and compiling with the tenant Ajv (RE2
 * patterns). Its top-level `$schema` is dropped: servers name draft-07 or 2020-12, and Troupe judges every tool
 * schema with one dialect, the one custom tools use.
 */
function inputSchema(tool: Tool, name: string, param: string): Record<string, unknown> {
  const where = `the input schema of ${name}`;
  const raw = tool.inputSchema as unknown;
  const bytes = Buffer.byteLength(JSON.stringify(raw ?? null));
  if (bytes > TOOL_SCHEMA_MAX_BYTES) throw new InvalidRequestError(`${where} is ${bytes} bytes; a tool schema may be at most ${TOOL_SCHEMA_MAX_BYTES}.`, param, 'invalid_tool_schema');
  if (nestsDeeperThan(raw, MAX_JSON_DEPTH)) throw new InvalidRequestError(`${where} nests deeper than ${MAX_JSON_DEPTH} levels.`, param, 'invalid_tool_schema');
  const schema = raw && typeof raw === 'object' && !Array.isArray(raw) ? Object.fromEntries(Object.entries(raw).filter(([k]) => k !== '$schema')) : raw;
  return compileToolSchema(schema, where, param, true, name);
}
