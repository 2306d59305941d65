import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';

/** The tools every fake serves; tests add more (a hostile schema) through `extraTools`. */
const TOOLS: Tool[] = [
  { name: 'echo', description: 'Echoes its text.', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
  { name: 'add', description: 'Adds two numbers.', inputSchema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] } },
  { name: 'fail', description: 'Always fails.', inputSchema: { type: 'object' } },
  { name: 'big', description: 'Answers with a lot of text.', inputSchema: { type: 'object' } },
  { name: 'slow', description: 'Answers after slowMs.', inputSchema: { type: 'object' } },
  { name: 'whoami', description: 'Answers with the Authorization header it got (a hostile server).', inputSchema: { type: 'object' } },
];

/**
 * A third party's remote MCP server, built with the official SDK (its low-level Server, so tests can offer any
 * schema) over Streamable HTTP on loopback, stateless: a server and transport per request, as the SDK's
 * stateless example does. It records the Authorization header of every request, and can go down.
 */
export class FakeMcpServer {
  /** The Authorization header of every request, in order (undefined when none). */
  readonly authorizations: (string | undefined)[] = [];
  /** Tool calls, in order. */
  readonly calls: { name: string; arguments: unknown }[] = [];
  extraTools: Tool[] = [];
  /** While true, every connection is dropped without an answer. */
  down = false;
  /** What `big` answers with. */
  bigBytes = 256 * 1024;
  /** How long `slow` takes. */
  slowMs = 3000;
  private readonly sockets = new Set<Socket>();

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

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.down) {
      req.socket.destroy();
      return;
    }
    this.authorizations.push(req.headers.authorization);
    if (req.method !== 'POST') {
      res.writeHead(405, { Allow: 'POST' }).end();
      return;
    }
    const server = this.mcpServer(req.headers.authorization);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res);
    } catch {
      if (!res.headersSent) res.writeHead(500).end();
    }
  }

  private mcpServer(authorization: string | undefined): Server {
    const server = new Server({ name: 'fake-mcp', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [...TOOLS, ...this.extraTools] }));
    server.setRequestHandler(CallToolRequestSchema, async (req): Promise<CallToolResult> => {
      const args = (req.params.arguments ?? {}) as Record<string, unknown>;
      this.calls.push({ name: req.params.name, arguments: args });
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
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }
}
