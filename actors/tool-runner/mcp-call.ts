import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ToolRunResult } from '../../src/domain/actors/session.js';
import type { McpServerEntry } from '../../src/domain/agent.js';
import { Redactor } from '../../src/domain/redact.js';
import { McpTooLargeError, type McpConnector } from '../../src/lib/mcp/connector.js';

/** The tool-runner's port to remote MCP servers: one call, its outcome as the model gets it. */
export interface McpCaller {
  call(orgId: string, server: McpServerEntry, tool: string, args: Record<string, unknown>, timeoutMs: number, signal?: AbortSignal): Promise<ToolRunResult>;
}

/**
 * Calls a remote MCP server's tool from the tool-runner process, never from the sandbox: the credential's value
 * is read here, sent as the bearer, and scrubbed from whatever comes back, so it reaches neither the sandbox nor
 * the ledger. Every failure of the server (unreachable, refused by the SSRF guard, timed out, too large, an error
 * it reports) is an error result for the model, never a failed message; only the credential store's own failure
 * throws, so the job is retried.
 */
export function mcpCaller(connector: McpConnector, reveal: (orgId: string, name: string) => Promise<string | null>): McpCaller {
  return {
    async call(orgId, server, tool, args, timeoutMs, signal) {
      const bearer = server.credential === undefined ? undefined : await reveal(orgId, server.credential);
      if (bearer === null) return { ok: false, error: `MCP server ${server.name} names credential ${server.credential}, which the org no longer has.` };
      const scrub = new Redactor([bearer]);
      let answer: CallToolResult;
      try {
        answer = await connector.callTool({ url: server.url, bearer, param: 'url', owner: { org: orgId, credential: server.credential } }, tool, args, timeoutMs, signal);
      } catch (e) {
        const why = e instanceof McpTooLargeError ? `${e.message}; the result was dropped` : (e as Error).message;
        return { ok: false, error: scrub.redact(`MCP server ${server.name} failed the call to ${tool}: ${why}`) };
      }
      return scrubbed(mcpOutcome(answer), scrub);
    },
  };
}

/**
 * What the model gets from an MCP answer: the server's structured content when it gives one, else its text
 * (the text blocks joined), else its content blocks as they came (images, resources). `isError` answers are
 * error results with their text.
 */
export function mcpOutcome(answer: CallToolResult): ToolRunResult {
  const content = Array.isArray(answer.content) ? answer.content : [];
  const texts = content.filter((c): c is Extract<typeof c, { type: 'text' }> => c.type === 'text').map((c) => c.text);
  if (answer.isError) return { ok: false, error: texts.join('\n') || 'The MCP tool reported an error.' };
  if (answer.structuredContent !== undefined) return { ok: true, output: answer.structuredContent };
  if (texts.length === content.length) return { ok: true, output: texts.join('\n') };
  return { ok: true, output: content };
}

function scrubbed(result: ToolRunResult, scrub: Redactor): ToolRunResult {
  if (!result.ok) return { ok: false, error: scrub.redact(result.error) };
  if (scrub.empty) return result;
  const text = scrub.redact(JSON.stringify(result.output));
  try {
    return { ok: true, output: JSON.parse(text) };
  } catch {
    // A secret whose raw form held JSON syntax: the scrubbed text, as text.
    return { ok: true, output: text };
  }
}
