import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { createHmac, randomBytes } from 'node:crypto';
import { Agent, fetch as undiciFetch } from 'undici';
import { ensureError } from '../../domain/errors.js';
import { Redactor } from '../../domain/redact.js';
import { guardedLookup } from '../net/guarded-lookup.js';
import type { ModelEndpointGuard } from '../net/model-endpoint.js';
import { validateWebhookUrl } from '../net/url-guard.js';
import { IdlePool } from './idle-pool.js';

/** One remote MCP server as a call or a listing reaches it. */
export interface McpEndpoint {
  url: string;
  /** The org credential's value, sent as `Authorization: Bearer`; scrubbed from anything the server sends back. */
  bearer?: string;
  /** The manifest field the URL came from, for a refusal's `param`. */
  param: string;
  /**
   * Whom a call serves: with the URL and a fingerprint of the bearer, the key its session is pooled under, so no two
   * orgs (nor two credentials, nor a credential before and after rotation) share one. Without it, never pooled.
   */
  owner?: { org: string; credential?: string };
}

export interface McpConnectorOptions extends ModelEndpointGuard {
  /** TROUPE_MCP_MAX_RESULT_BYTES: the most a tool call's answer may hold, on the wire. */
  maxResultBytes: number;
  /** TROUPE_MCP_POOL_SESSIONS (0: a session per call) and TROUPE_MCP_POOL_IDLE_MS: initialized sessions kept for reuse. */
  pool?: { sessions: number; idleMs: number };
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
/** How long a session's closing DELETE may take: it is a courtesy to the server, off every call's path. */
const TERMINATE_MS = 2_000;

/** The SDK compiles each tool's outputSchema with its own Ajv: a tenant's schema must not be compiled there, and Troupe does not check outputs. */
const ACCEPT_ANY = { getValidator: () => (input: unknown) => ({ valid: true as const, data: input as never, errorMessage: undefined }) };

/** One MCP client session; `limits` are the current operation's (one at a time: a pooled session is out of the pool while used). */
interface McpSession {
  client: Client;
  transport: StreamableHTTPClientTransport;
  limits: { maxBytes: number; overflow: AbortController };
  /** Initialized and never failed: only such a session is pooled or politely terminated. */
  healthy: boolean;
}

/**
 * Reaches remote MCP servers over Streamable HTTP with the official SDK, on the
 * same rules as model endpoints: every request's URL passes the URL guard
 * (an IP-literal host is not looked up by the socket), and every connection
 * goes through the guarded lookup, which checks the addresses it connects to
 * (DNS rebinding). Answers are read up to a byte cap per operation; whatever the
 * server sends back, error texts included, has the bearer scrubbed.
 *
 * Tool calls reuse an initialized session per (org, URL, credential name,
 * credential fingerprint) when `pool` allows (idle-pool.ts); listings at publish
 * get a session of their own.
 */
export class McpConnector {
  private readonly agent: Agent;
  private readonly pool: IdlePool<McpSession>;
  /** Per process: the bearer's fingerprint in a pool key cannot be matched against a guessed value elsewhere. */
  private readonly fingerprintKey = randomBytes(32);
  private readonly disposing = new Set<Promise<void>>();
  private closing: Promise<void> | null = null;
  readonly name = 'mcp-connector';

  constructor(private readonly opts: McpConnectorOptions) {
    this.agent = new Agent({ keepAliveTimeout: 10_000, connections: 64, connect: { lookup: guardedLookup({ allowPrivate: opts.allowPrivate, resolver: opts.resolver }), timeout: CONNECT_TIMEOUT_MS } });
    const pool = opts.pool ?? { sessions: 0, idleMs: 0 };
    this.pool = new IdlePool({ max: pool.sessions, idleMs: pool.idleMs, evict: (s) => this.dispose(s) });
  }

  /** Sessions held idle for reuse (tests, metrics). */
  get pooled(): number {
    return this.pool.size;
  }

  /** The URL rules alone (a 400 naming `param`), for publish to refuse a server before reaching it. */
  async check(endpoint: McpEndpoint): Promise<void> {
    await validateWebhookUrl(endpoint.url, { allowPrivate: this.opts.allowPrivate, resolver: this.opts.resolver, param: endpoint.param, codeStem: 'mcp_url' });
  }

  /** Every tool the server lists, page by page, up to `maxTools`. */
  async listTools(endpoint: McpEndpoint, timeoutMs: number, maxTools: number): Promise<Tool[]> {
    return this.session({ ...endpoint, owner: undefined }, LIST_PAGE_BYTES, timeoutMs, undefined, async (client, options) => {
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
   * Runs `work` on a session: a pooled one of the same key when there is one, else a new one (the MCP handshake).
   * A session that fails in any way but a JSON-RPC error answer is dropped. A reused session the server no longer
   * knows (HTTP 404, which the spec makes its answer to a stale Mcp-Session-Id: it ran nothing) is replaced once and
   * the work sent again; no other failure is retried, since the server may have run the call.
   */
  private async session<T>(endpoint: McpEndpoint, maxBytes: number, timeoutMs: number, signal: AbortSignal | undefined, work: (client: Client, options: { timeout: number; signal: AbortSignal }) => Promise<T>): Promise<T> {
    const scrub = new Redactor([endpoint.bearer]);
    await this.check(endpoint);
    const key = endpoint.owner && !this.closing ? this.keyOf(endpoint) : undefined;
    const deadline = AbortSignal.timeout(timeoutMs);
    let reused = key === undefined ? undefined : this.takeHealthy(key);
    for (;;) {
      const s = reused ?? this.open(endpoint);
      const fresh = reused === undefined;
      // The 404 that lets a call be sent again is the spec's answer to a session id the server does not know.
      const hadSession = s.transport.sessionId !== undefined;
      reused = undefined;
      // Overflow aborts the whole operation: on an SSE answer the SDK would otherwise only report the stream's error and wait.
      s.limits = { maxBytes, overflow: new AbortController() };
      const all = AbortSignal.any([s.limits.overflow.signal, deadline, ...(signal ? [signal] : [])]);
      const options = { timeout: timeoutMs, signal: all };
      try {
        if (fresh) await s.client.connect(s.transport, options);
        s.healthy = true;
        const out = await work(s.client, options);
        if (key === undefined) this.dispose(s);
        else this.pool.give(key, s);
        return out;
      } catch (e) {
        // A JSON-RPC error answer leaves an initialized session as good as it was; anything else may not have.
        s.healthy &&= e instanceof McpError && e.code !== ErrorCode.RequestTimeout && e.code !== ErrorCode.ConnectionClosed && !all.aborted;
        if (s.healthy && key !== undefined) this.pool.give(key, s);
        else this.dispose(s);
        if (s.limits.overflow.signal.aborted) throw new McpTooLargeError(maxBytes);
        if (!fresh && hadSession && e instanceof StreamableHTTPError && e.code === 404 && !all.aborted) continue;
        throw new Error(scrub.redact(describe(e, signal)));
      }
    }
  }

  private takeHealthy(key: string): McpSession | undefined {
    for (let s = this.pool.take(key); s; s = this.pool.take(key)) {
      if (s.healthy) return s;
      this.dispose(s);
    }
    return undefined;
  }

  private keyOf(endpoint: McpEndpoint): string {
    const fingerprint = createHmac('sha256', this.fingerprintKey).update(endpoint.bearer ?? '').digest('base64url');
    return JSON.stringify([endpoint.owner!.org, endpoint.url, endpoint.owner!.credential ?? '', fingerprint]);
  }

  private open(endpoint: McpEndpoint): McpSession {
    const s: McpSession = { limits: { maxBytes: 0, overflow: new AbortController() }, healthy: false } as McpSession;
    s.transport = new StreamableHTTPClientTransport(new URL(endpoint.url), {
      fetch: this.guardedFetch(endpoint, s),
      requestInit: endpoint.bearer ? { headers: { Authorization: `Bearer ${endpoint.bearer}` } } : undefined,
      reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 },
    });
    s.client = new Client({ name: 'troupe', version: '1' }, { capabilities: {}, jsonSchemaValidator: ACCEPT_ANY });
    // Closed under us (the transport gave up): never handed out again.
    s.client.onclose = () => void (s.healthy = false);
    return s;
  }

  /** Closes a session in the background: a healthy one first asks the server to end it (DELETE), bounded. */
  private dispose(s: McpSession): void {
    const done = (async () => {
      if (s.healthy && s.transport.sessionId) {
        s.limits = { maxBytes: LIST_PAGE_BYTES, overflow: new AbortController() };
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, TERMINATE_MS).unref()));
        await Promise.race([s.transport.terminateSession().catch(() => undefined), late]);
        clearTimeout(timer);
      }
      s.healthy = false;
      await s.client.close().catch(() => undefined);
    })();
    this.disposing.add(done);
    void done.finally(() => this.disposing.delete(done));
  }

  /**
   * The SDK's fetch: each URL (redirect hops too) through the URL rules, connections through the guarded lookup,
   * answers capped at the current operation's limit. The standalone GET stream is answered 405 here, as a server
   * without one would: Troupe takes no server-initiated messages, and an idle pooled session then holds no
   * connection and receives nothing outside an operation's byte cap.
   */
  private guardedFetch(endpoint: McpEndpoint, s: McpSession) {
    return async (url: string | URL, init?: RequestInit): Promise<Response> => {
      if ((init?.method ?? 'GET').toUpperCase() === 'GET') return new Response(null, { status: 405 });
      if (String(url) !== endpoint.url) await this.check({ ...endpoint, url: String(url) });
      const { maxBytes, overflow } = s.limits;
      const res = await undiciFetch(url, { ...(init as object), dispatcher: this.agent });
      return capped(res as unknown as Response, maxBytes, overflow);
    };
  }

  /** Drain: every pooled session is ended (sessions in use end when their call does), then the connections. */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.pool.drain();
    this.closing = (async () => {
      await Promise.all([...this.disposing]);
      await this.agent.close();
    })();
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
