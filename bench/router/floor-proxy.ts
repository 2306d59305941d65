/**
 * The floor a Node proxy cannot go under on this host: a node:http server
 * that forwards each POST's bytes unchanged to the fake upstream through an
 * undici keep-alive pool, and relays the answer's bytes back. No auth, no
 * parsing, no translation, no metrics. What the router adds beyond what this
 * adds is the router's own work; what this adds is the extra process hop
 * (two more wake-ups and two more loopback writes per call).
 * Usage: node floor-proxy.js <upstream origin> (prints its own origin)
 */
import { createServer } from 'node:http';
import { Agent, request } from 'undici';

const upstream = process.argv[2];
const agent = new Agent({ keepAliveTimeout: 60_000, connections: 256 });
const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    // The bench's router paths are /<router>/chat/completions; the fake serves chat at /v1/... and Messages at /v1/messages.
    const path = req.url!.startsWith('/anth/') ? '/v1/messages' : '/v1/chat/completions';
    const anthropic = path === '/v1/messages';
    const body = anthropic ? anthropicBody(Buffer.concat(chunks)) : Buffer.concat(chunks);
    request(upstream + path, { method: 'POST', headers: { 'content-type': 'application/json', ...(anthropic ? { 'x-api-key': 'sk-bench', 'anthropic-version': '2023-06-01' } : { authorization: 'Bearer sk-bench' }) }, body, dispatcher: agent }).then(
      async (up) => {
        res.writeHead(up.statusCode, { 'content-type': String(up.headers['content-type'] ?? 'application/json') });
        for await (const chunk of up.body) res.write(chunk);
        res.end();
      },
      (err: Error) => {
        res.writeHead(502).end(err.message);
      },
    );
  });
});

/** The Messages API needs max_tokens; the bench's chat body has none. The floor's answer is Anthropic's shape, which the bench accepts. */
function anthropicBody(raw: Buffer): string {
  const b = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
  return JSON.stringify({ ...b, model: 'm', max_tokens: 256 });
}

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`http://127.0.0.1:${(server.address() as { port: number }).port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
