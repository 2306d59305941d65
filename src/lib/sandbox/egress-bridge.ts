/**
 * Preloaded (`--require`) into a sandboxed Node tool that has internet
 * access. The sandbox's network namespace holds only loopback; its one way
 * out is the call's egress proxy, a Unix socket at TROUPE_EGRESS_SOCKET. This
 * module makes ordinary clients use it:
 *
 * - global `fetch` (and anything on undici's global dispatcher) goes through
 *   an undici ProxyAgent that reaches the proxy over the socket (Node 20 has
 *   no NODE_USE_ENV_PROXY);
 * - a TCP listener on 127.0.0.1 inside the sandbox pipes each connection to the
 *   socket, and HTTP_PROXY / HTTPS_PROXY (both cases) name it, for clients
 *   that honour those variables (axios, got with an agent, child tools).
 *
 * Nothing here is a boundary: a tool that bypasses it reaches nothing, because
 * the namespace has no route out. Only Node built-ins and undici are loaded;
 * the sandbox binds undici's folder read-only and names it in
 * TROUPE_EGRESS_UNDICI (a bare `require('undici')` would search folders the
 * permission model does not let it read).
 */
import net = require('node:net');

const socketPath = process.env.TROUPE_EGRESS_SOCKET;

const PROXY_VARS = ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy'];

/** Resolves with the bridge's port once it listens (a runner may await it before loading the tool). */
const READY = Symbol.for('troupe.egress.ready');

function pipeToSocket(path: string): net.Server {
  return net.createServer((conn) => {
    const out = net.connect(path);
    const end = () => {
      conn.destroy();
      out.destroy();
    };
    conn.on('error', end).on('close', end);
    out.on('error', end).on('close', end);
    conn.pipe(out).pipe(conn);
  });
}

/** The slot Node's own fetch and every undici copy read their global dispatcher from. */
const DISPATCHER = Symbol.for('undici.globalDispatcher.1');

type UndiciParts = Pick<typeof import('undici'), 'ProxyAgent' | 'Pool' | 'setGlobalDispatcher'>;

/**
 * The three parts of undici the bridge uses, from the folder in
 * TROUPE_EGRESS_UNDICI: loading them alone takes about half the time of the
 * whole package (its fetch, WebSocket, caches), which a tool's first fetch
 * waits for. The whole package when a later undici moves them.
 */
function loadUndici(): UndiciParts {
  const dir = process.env.TROUPE_EGRESS_UNDICI;
  if (dir) {
    try {
      const { setGlobalDispatcher } = require(`${dir}/lib/global.js`) as UndiciParts;
      const ProxyAgent = require(`${dir}/lib/dispatcher/proxy-agent.js`) as UndiciParts['ProxyAgent'];
      const Pool = require(`${dir}/lib/dispatcher/pool.js`) as UndiciParts['Pool'];
      // The one request API ProxyAgent calls on its pool (the package's entry installs them all).
      const Dispatcher = require(`${dir}/lib/dispatcher/dispatcher.js`) as { prototype: Record<string, unknown> };
      Dispatcher.prototype.connect ??= require(`${dir}/lib/api/api-connect.js`) as unknown;
      if (typeof setGlobalDispatcher === 'function' && typeof ProxyAgent === 'function' && typeof Pool.prototype.connect === 'function') return { setGlobalDispatcher, ProxyAgent, Pool };
    } catch {
      // Another layout: the package's own entry below.
    }
  }
  return require(dir ?? 'undici') as UndiciParts;
}

/**
 * Puts a ProxyAgent in the global dispatcher slot the first time anything
 * reads it (fetch does on each call), so a tool that never fetches does not pay
 * for loading undici.
 */
function installFetchProxy(path: string): void {
  Object.defineProperty(globalThis, DISPATCHER, {
    configurable: true,
    enumerable: false,
    get() {
      // A plain slot first: undici reads it while loading, and would recurse into this getter.
      Object.defineProperty(globalThis, DISPATCHER, { value: undefined, writable: true, configurable: true, enumerable: false });
      const undici = loadUndici();
      // The proxy's URL only names the protocol; every connection to it goes to the socket.
      undici.setGlobalDispatcher(new undici.ProxyAgent({ uri: 'http://troupe-egress.invalid', clientFactory: (origin) => new undici.Pool(origin, { connect: { socketPath: path } }) }));
      return (globalThis as Record<symbol, unknown>)[DISPATCHER];
    },
  });
}

if (socketPath) {
  installFetchProxy(socketPath);
  // Empty, not absent: nothing the tool inherits may exempt a host from the proxy.
  process.env.NO_PROXY = '';
  process.env.no_proxy = '';
  const server = pipeToSocket(socketPath);
  server.unref();
  const ready = new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    // Listening happens on a process.nextTick, so the variables are set before
    // any I/O callback runs, such as the runner's read of its input.
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      for (const name of PROXY_VARS) process.env[name] = `http://127.0.0.1:${port}`;
      resolve(port);
    });
  });
  ready.catch(() => undefined);
  Object.defineProperty(globalThis, READY, { value: ready, enumerable: false });
}
