import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { Agent, fetch as undiciFetch } from 'undici';
import { ensureError } from '../../domain/errors.js';
import { Redactor } from '../../domain/redact.js';
import { guardedLookup } from '../net/guarded-lookup.js';
import type { ModelEndpointGuard } from '../net/model-endpoint.js';
import { validateWebhookUrl } from '../net/url-guard.js';

/** One remote MCP server as a call or a listing reaches it. */
export interface McpEndpoint {
  url: string;
  /** The org credential's value, sent as `Authorization: Bearer`; scrubbed from anything the server sends back. */
  bearer?: string;
  /** The manifest field the URL came from, for a refusal's `param`. */
  param: string;
}

export interface McpConnectorOptions extends ModelEndpointGuard {
  /** TROUPE_MCP_MAX_RESULT_BYTES: the most a tool call's answer may hold, on the wire. */
  maxResultBytes: number;
}

/** An answer past the byte cap: the call fails with it, and nothing more is read. */
export class McpTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`the MCP server's answer is larger than ${limit} bytes`);
  }
}

/** What a tool listing may hold per page, and how many pages are read: far above a real server's, far below a process's memory. */
const LIST_PAGE_BYTES = 4 * 1024 * 1024;
const LIST_PAGES = 16;
const CONNECT_TIMEOUT_MS = 10_000;

/** The SDK compiles each tool's outputSchema with its own Ajv: a tenant's schema must not be compiled there, and Troupe does not check outputs. */
const ACCEPT_ANY = { getValidator: () => (input: unknown) => ({ valid: true as const, data: input as never, errorMessage: undefined }) };

/**
 * Reaches remote MCP servers over Streamable HTTP with the official SDK, on the
 * same rules as model endpoints: every request's URL passes the URL guard
 * (an IP-literal host is not looked up by the socket), and every connection
 * goes through the guarded lookup, which checks the addresses it connects to
 * (DNS rebinding). Answers are read up to a byte cap; whatever the server
 * sends back, error texts included, has the bearer scrubbed.
 */
export class McpConnector {
  private readonly agent: Agent;
  private closing: Promise<void> | null = null;
  readonly name = 'mcp-connector';

  constructor(private readonly opts: McpConnectorOptions) {
    this.agent = new Agent({ keepAliveTimeout: 10_000, connections: 64, connect: { lookup: guardedLookup({ allowPrivate: opts.allowPrivate, resolver: opts.resolver }), timeout: CONNECT_TIMEOUT_MS } });
  }

  /** The URL rules alone (a 400 naming `param`), for publish to refuse a server before reaching it. */
  async check(endpoint: McpEndpoint): Promise<void> {
    await validateWebhookUrl(endpoint.url, { allowPrivate: this.opts.allowPrivate, resolver: this.opts.resolver, param: endpoint.param, codeStem: 'mcp_url' });
  }

  /** Every tool the server lists, page by page, up to `maxTools`. */
  async listTools(endpoint: McpEndpoint, timeoutMs: number, maxTools: number): Promise<Tool[]> {
    return this.session(endpoint, LIST_PAGE_BYTES, timeoutMs, undefined, async (client, options) => {
      const tools: Tool[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < LIST_PAGES; page++) {
        const listed = await client.listTools(cursor === undefined ? undefined : { cursor }, options);
        tools.push(...listed.tools);
        if (tools.length > maxTools) throw new Error(`the server lists more than ${maxTools} tools; name the ones to use in allowed_tools`);
        cursor = listed.nextCursor;
        if (cursor === undefined) return tools;
      }
      throw new Error(`the server's tool list runs past ${LIST_PAGES} pages`);
    });
  }

  /** One tool call; throws on anything but an answer (unreachable, refused, timed out, too large, a JSON-RPC error). */
  async callTool(endpoint: McpEndpoint, tool: string, args: Record<string, unknown>, timeoutMs: number, signal?: AbortSignal): Promise<CallToolResult> {
    return this.session(endpoint, this.opts.maxResultBytes, timeoutMs, signal, (client, options) => client.callTool({ name: tool, arguments: args }, undefined, options) as Promise<CallToolResult>);
  }

  /**
   * Connects (the MCP handshake), runs `work`, and closes. A connection per operation: a call is rare next to a
   * model call, and no session of a third party's server outlives the job that needed it.
   */
  private async session<T>(endpoint: McpEndpoint, maxBytes: number, timeoutMs: number, signal: AbortSignal | undefined, work: (client: Client, options: { timeout: number; signal: AbortSignal }) => Promise<T>): Promise<T> {
    const scrub = new Redactor([endpoint.bearer]);
    await this.check(endpoint);
    // Overflow aborts the whole operation: on an SSE answer the SDK would otherwise only report the stream's error and wait.
    const overflow = new AbortController();
    const all = AbortSignal.any([overflow.signal, AbortSignal.timeout(timeoutMs), ...(signal ? [signal] : [])]);
    const transport = new StreamableHTTPClientTransport(new URL(endpoint.url), {
      fetch: this.guardedFetch(endpoint, maxBytes, overflow),
      requestInit: endpoint.bearer ? { headers: { Authorization: `Bearer ${endpoint.bearer}` } } : undefined,
      reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 },
    });
    const client = new Client({ name: 'troupe', version: '1' }, { capabilities: {}, jsonSchemaValidator: ACCEPT_ANY });
    try {
      const options = { timeout: timeoutMs, signal: all };
      await client.connect(transport, options);
      return await work(client, options);
    } catch (e) {
      if (overflow.signal.aborted) throw new McpTooLargeError(maxBytes);
      throw new Error(scrub.redact(describe(e, signal)));
    } finally {
      await client.close().catch(() => undefined);
    }
  }

  /** The SDK's fetch: each URL (redirect hops too) through the URL rules, connections through the guarded lookup, answers capped. */
  private guardedFetch(endpoint: McpEndpoint, maxBytes: number, overflow: AbortController) {
    return async (url: string | URL, init?: RequestInit): Promise<Response> => {
      if (String(url) !== endpoint.url) await this.check({ ...endpoint, url: String(url) });
      const res = await undiciFetch(url, { ...(init as object), dispatcher: this.agent });
      return capped(res as unknown as Response, maxBytes, overflow);
    };
  }

  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.closing = this.agent.close();
    return this.closing;
  }
}

/** The answer with its body read through a counter that aborts the operation past `max` bytes. */
function capped(res: Response, max: number, overflow: AbortController): Response {
  if (!res.body) return res;
  const reader = res.body.getReader();
  let seen = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(ctrl) {
      const { done, value } = await reader.read();
      if (done) return ctrl.close();
      seen += value.byteLength;
      if (seen > max) {
        overflow.abort();
        ctrl.error(new McpTooLargeError(max));
        await reader.cancel().catch(() => undefined);
        return;
      }
      ctrl.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}

/** The failure in words the model and the publisher can act on; a refused address keeps the guard's text (never the address). */
function describe(e: unknown, signal: AbortSignal | undefined): string {
  if (signal?.aborted) return 'the call was cancelled';
  const err = ensureError(e);
  const cause = (err as { cause?: unknown }).cause;
  const detail = cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
  if (/timed? ?out|AbortError|aborted/i.test(detail) && !/address/.test(detail)) return `the MCP server did not answer in time (${detail})`;
  return detail;
}
