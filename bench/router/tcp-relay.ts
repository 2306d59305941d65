/**
 * The least a Node process can do per hop: a raw TCP relay. Each client
 * connection gets its own upstream connection, and the bytes are piped both
 * ways unchanged, with no HTTP parsing at all. What it adds over the direct
 * call is one more process's wake-ups and loopback writes per call, nothing
 * else; any Node proxy that reads HTTP does at least this.
 * Usage: node tcp-relay.js <upstream origin> (prints its own origin)
 */
import { connect, createServer } from 'node:net';

const upstream = new URL(process.argv[2]);
const server = createServer({ noDelay: true }, (client) => {
  const up = connect({ host: upstream.hostname, port: Number(upstream.port), noDelay: true });
  client.pipe(up);
  up.pipe(client);
  const close = () => {
    client.destroy();
    up.destroy();
  };
  client.on('error', close).on('close', close);
  up.on('error', close).on('close', close);
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`http://127.0.0.1:${(server.address() as { port: number }).port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
