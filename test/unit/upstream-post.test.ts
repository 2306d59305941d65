import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { Agent } from 'undici';
import { postStreaming, postWhole, type PostTarget } from '../../src/lib/llm/upstream-post.js';

/** Reading upstream answers straight from undici's dispatch callbacks, against a real local HTTP server. */
describe('upstream POSTs read from dispatch callbacks', () => {
  let server: Server;
  let origin = '';
  const agent = new Agent({ keepAliveTimeout: 1000 });
  /** What the server does with each request; `closedEarly` counts answers cut before their end. */
  let answer: (res: ServerResponse) => void = () => undefined;
  let closedEarly = 0;

  before(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.once('close', () => void (res.writableFinished || closedEarly++));
        answer(res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(async () => {
    await agent.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => (closedEarly = 0));
  const target = (): PostTarget => ({ origin, path: '/x', headers: { 'content-type': 'application/json' }, body: '{}' });

  it('reads a whole answer with its status and headers', async () => {
    answer = (res) => res.writeHead(429, { 'retry-after': '3' }).end('{"error":"slow down"}');
    const res = await postWhole(agent, target(), undefined, 1 << 20);
    assert.equal(res.statusCode, 429);
    assert.equal(res.headers['retry-after'], '3');
    assert.equal(res.text, '{"error":"slow down"}');
  });

  it('stops a whole answer past its cap: the request is aborted and the call fails upstream_response_too_large', async () => {
    // The upstream would send 200 MiB; it gets to write little more than the cap before the connection is cut.
    let sent = 0;
    let finished = false;
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const piece = Buffer.alloc(64 * 1024, 0x61);
      const pump = () => {
        while (sent < 200 * 2 ** 20 && !res.destroyed) {
          sent += piece.length;
          if (!res.write(piece)) return void res.once('drain', pump);
        }
        if (!res.destroyed) res.end(() => (finished = true));
      };
      res.once('close', () => undefined);
      pump();
    };
    const cap = 1 << 20;
    await assert.rejects(postWhole(agent, target(), undefined, cap), (e: Error & { code?: string }) => e.code === 'upstream_response_too_large' && /upstream_response_too_large/.test(e.message));
    for (let i = 0; i < 100 && closedEarly === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(closedEarly, 1, 'the upstream connection was cut');
    assert.equal(finished, false);
    // What the fake managed to write: the cap plus what the two sockets' buffers held when the cut came.
    assert.ok(sent < cap + 16 * 2 ** 20, `the fake sent ${sent} bytes before the abort`);
  });

  it('hands a stream over at its headers and delivers every chunk in order to a slow reader', async () => {
    const parts = Array.from({ length: 400 }, (_, i) => `${String(i).padStart(4, '0')}:${'x'.repeat(1000)}\n`);
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const p of parts) res.write(p); // 400 KB in many writes, read in whatever chunks the socket delivers
      res.end();
    };
    const res = await postStreaming(agent, target());
    assert.equal(res.statusCode, 200);
    let text = '';
    for (let c = await res.body.read(); c; c = await res.body.read()) {
      text += c.toString('utf8');
      await new Promise((r) => setImmediate(r));
    }
    assert.equal(text, parts.join(''));
    assert.equal(await res.body.read(), null, 'reads after the end keep answering null');
  });

  it('closing a stream early stops the upstream answer', async () => {
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
      // the rest would come much later
    };
    const res = await postStreaming(agent, target());
    assert.match(String(await res.body.read()), /first/);
    res.body.close();
    for (let i = 0; i < 100 && closedEarly === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(closedEarly, 1);
  });

  it('a cancellation rejects with its reason, before the answer and while it streams', async () => {
    const early = new AbortController();
    early.abort(new Error('gone before'));
    await assert.rejects(postWhole(agent, target(), early.signal, 1 << 20), /gone before/);
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
    };
    const late = new AbortController();
    const res = await postStreaming(agent, target(), late.signal);
    assert.match(String(await res.body.read()), /first/);
    const pending = res.body.read();
    late.abort(new Error('gone during'));
    await assert.rejects(pending, /gone during/);
    for (let i = 0; i < 100 && closedEarly === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(closedEarly, 1);
  });
});
