/**
 * How a remote MCP server's tools are named to the model (DESIGN §8): `mcp__<server>__<tool>`. A server name has no
 * `__` and does not start or end with `_`, so the name splits back one way only, and the whole must fit the
 * providers' tool-name rule (the manifest's TOOL_NAME: 64 characters of letters, digits, `_` and `-`).
 */
export const MCP_PREFIX = 'mcp__';

/** The manifest's rule for a server name: letters, digits, `_` and `-`, at most 32. */
export const MCP_SERVER_NAME = '^[A-Za-z0-9_-]{1,32}$';

/** Why a server name cannot be used, or null. */
export function mcpServerNameProblem(name: string): string | null {
  if (name.includes('__')) return 'must not contain "__" (it separates the server from the tool in mcp__<server>__<tool>)';
  if (name.startsWith('_') || name.endsWith('_')) return 'must not start or end with "_"';
  return null;
}

export function mcpToolName(server: string, tool: string): string {
  return `${MCP_PREFIX}${server}__${tool}`;
}
