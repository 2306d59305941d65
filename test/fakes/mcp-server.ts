import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, isInitializeRequest, ListToolsRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';

/** The tools every fake serves; tests add more (a hostile schema) through `extraTools`. */
const TOOLS: Tool[] = [
  { name: 'echo', description: 'Echoes its text.', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
  { name: 'add', description: 'Adds two numbers.', inputSchema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] } },
  { name: 'fail', description: 'Always fails.', inputSchema: { type: 'object' } },
  { name: 'big', description: 'Answers with a lot of text.', inputSchema: { type: 'object' } },
  { name: 'slow', description: 'Answers after slowMs.', inputSchema: { type: 'object' } },
  { name: 'whoami', description: 'Answers with the Authorization header it got (a hostile server).', inputSchema: { type: 'object' } },
];

/** A session the fake keeps between requests: its SDK server and transport, and the bearer it was opened with. */
interface FakeSession {
  server: Server;
  transport: StreamableHTTPServerTransport;
  authorization: string | undefined;
}

/**
 * A third party's remote MCP server, built with the official SDK (its low-level Server, so tests can offer any
 * schema) over Streamable HTTP on loopback, stateful as most are: `initialize` opens a session (an Mcp-Session-Id),
 * later requests name it, an unknown id gets the spec's 404, and DELETE ends it. It records the Authorization header
 * of every request, every initialize and every tool it runs, can forget its sessions (`expireSessions`), and can go down.
 */
export class FakeMcpServer {
  /** The Authorization header of every request, in order (undefined when none). */
  readonly authorizations: (string | undefined)[] = [];
  /** The Authorization header of every `initialize` (a new session), in order. */
  readonly initializes: (string | undefined)[] = [];
  /** Sessions ended by the client's DELETE. */
  terminated = 0;
  /** Tool calls it ran, in order. */
  readonly calls: { name: string; arguments: unknown }[] = [];
  /** The session and the bearer each of `calls` came on, in the same order. */
  readonly callSessions: { session: string | undefined; authorization: string | undefined }[] = [];
  extraTools: Tool[] = [];
  /** While true, every connection is dropped without an answer. */
  down = false;
  /** What `big` answers with. */
  bigBytes = 256 * 1024;
  /** How long `slow` takes. */
  slowMs = 3000;
  private readonly sockets = new Set<Socket>();
  private readonly sessions = new Map<string, FakeSession>();

  private constructor(private readonly http: HttpServer) {
    http.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  static async start(): Promise<FakeMcpServer> {
    let fake!: FakeMcpServer;
    const http = createServer((req, res) => void fake.handle(req, res));
    fake = new FakeMcpServer(http);
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    return fake;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}/mcp`;
  }

  /** Sessions open now. */
  get openSessions(): number {
    return this.sessions.size;
  }

  /** Whether the session of that id is still open (not ended by DELETE nor expired). */
  hasSession(id: string | undefined): boolean {
    return id !== undefined && this.sessions.has(id);
  }

  /** Forgets every session, as a server restart or its own idle expiry would: their next request gets a 404. */
  expireSessions(): void {
    const all = [...this.sessions.values()];
    this.sessions.clear();
    for (const s of all) void s.transport.close().then(() => s.server.close());
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.down) {
      req.socket.destroy();
      return;
    }
    this.authorizations.push(req.headers.authorization);
    try {
      const id = req.headers['mcp-session-id'];
      if (typeof id === 'string') {
        const session = this.sessions.get(id);
        if (!session) {
          res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
          return;
        }
        if (req.method === 'DELETE') this.terminated++;
        await session.transport.handleRequest(req, res);
        return;
      }
      if (req.method !== 'POST') {
        res.writeHead(405, { Allow: 'POST' }).end();
        return;
      }
      const body: unknown = JSON.parse(await text(req));
      if (!isInitializeRequest(body)) {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'No session' }, id: null }));
        return;
      }
      this.initializes.push(req.headers.authorization);
      const session: FakeSession = { authorization: req.headers.authorization } as FakeSession;
      session.transport = new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID, onsessioninitialized: (sid) => void this.sessions.set(sid, session) });
      session.transport.onclose = () => {
        if (session.transport.sessionId) this.sessions.delete(session.transport.sessionId);
      };
      session.server = this.mcpServer(session);
      await session.server.connect(session.transport);
      await session.transport.handleRequest(req, res, body);
    } catch {
      if (!res.headersSent) res.writeHead(500).end();
    }
  }

  private mcpServer(session: FakeSession): Server {
    const authorization = session.authorization;
    const server = new Server({ name: 'fake-mcp', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [...TOOLS, ...this.extraTools] }));
    server.setRequestHandler(CallToolRequestSchema, async (req): Promise<CallToolResult> => {
      const args = (req.params.arguments ?? {}) as Record<string, unknown>;
      this.calls.push({ name: req.params.name, arguments: args });
      this.callSessions.push({ session: session.transport.sessionId, authorization });
      switch (req.params.name) {
        case 'echo':
          return { content: [{ type: 'text', text: JSON.stringify({ echo: args.text }) }] };
        case 'add':
          return { content: [{ type: 'text', text: String(Number(args.a) + Number(args.b)) }], structuredContent: { sum: Number(args.a) + Number(args.b) } };
        case 'fail':
          return { content: [{ type: 'text', text: 'the fake failed on purpose' }], isError: true };
        case 'big':
          return { content: [{ type: 'text', text: 'x'.repeat(this.bigBytes) }] };
        case 'slow':
          await new Promise((resolve) => setTimeout(resolve, this.slowMs).unref());
          return { content: [{ type: 'text', text: 'late' }] };
        case 'whoami':
          return { content: [{ type: 'text', text: `you sent ${authorization}` }] };
        default:
          throw new Error(`no tool ${req.params.name}`);
      }
    });
    return server;
  }

  async close(): Promise<void> {
    this.expireSessions();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }
}

function text(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
