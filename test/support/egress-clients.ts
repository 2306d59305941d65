import { spawn } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';

const ROOT = join(__dirname, '..', '..', '..');
export const NODE_BRIDGE = join(ROOT, 'dist', 'src', 'lib', 'sandbox', 'egress-bridge.js');
export const PYTHON_BRIDGE_DIR = join(ROOT, 'src', 'lib', 'sandbox', 'python');

/** What one client attempt came to: the status and body it got, or the error it saw. */
export interface Attempt {
  target: string;
  status?: number;
  body?: string;
  error?: string;
}

const CHILD_DEADLINE_MS = 20_000;

/** Runs a child with only the given environment and returns the JSON lines it printed on stdout. */
function runChild(file: string, args: string[], env: Record<string, string>): Promise<Attempt[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_DEADLINE_MS);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`${file} exited ${code}: ${err.slice(-2000)}`));
      resolve(out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Attempt));
    });
  });
}

/**
 * A Node process with the egress bridge preloaded (as the sandbox does), that
 * fetches each URL with global fetch and then, with `viaEnv`, GETs each URL
 * through HTTP_PROXY with plain node:http (absolute-form, as env-proxy clients do).
 */
export function nodeClient(socketPath: string, urls: string[], viaEnv = false): Promise<Attempt[]> {
  const script = `
    const http = require('node:http');
    const print = (a) => console.log(JSON.stringify(a));
    const viaEnv = (target) => new Promise((done) => {
      const proxy = new URL(process.env.HTTP_PROXY);
      const req = http.get({ host: proxy.hostname, port: proxy.port, path: target, timeout: 5000 }, (res) => {
        let body = ''; res.on('data', (c) => body += c); res.on('end', () => done({ target: 'env ' + target, status: res.statusCode, body }));
      });
      req.on('error', (e) => done({ target: 'env ' + target, error: e.code || e.message }));
    });
    (async () => {
      for (const target of ${JSON.stringify(urls)}) {
        try {
          const res = await fetch(target, { signal: AbortSignal.timeout(5000) });
          print({ target, status: res.status, body: await res.text() });
        } catch (e) { print({ target, error: String(e.cause && (e.cause.code || e.cause.message) || e.message) }); }
        if (${viaEnv}) print(await viaEnv(target));
      }
      process.exit(0);
    })();`;
  return runChild(process.execPath, ['--require', NODE_BRIDGE, '-e', script], { TROUPE_EGRESS_SOCKET: socketPath, TROUPE_EGRESS_UNDICI: dirname(realpathSync(require.resolve('undici/package.json'))) });
}

/**
 * A Python process that starts the egress bridge (as the Python runner does)
 * and GETs each URL with urllib (which reads the *_PROXY variables), and with
 * `tunnel`, through a CONNECT tunnel with http.client (as HTTPS clients do).
 */
export function pythonClient(socketPath: string, urls: string[], tunnel = false): Promise<Attempt[]> {
  const script = `
import json, sys, urllib.request, urllib.error, urllib.parse, http.client, os
sys.path.insert(0, ${JSON.stringify(PYTHON_BRIDGE_DIR)})
import egress_bridge
port = egress_bridge.start()
def attempt(target, fn):
    try:
        status, body = fn()
        print(json.dumps({"target": target, "status": status, "body": body}))
    except urllib.error.HTTPError as e:
        print(json.dumps({"target": target, "status": e.code, "body": e.read().decode()}))
    except Exception as e:
        print(json.dumps({"target": target, "error": type(e).__name__ + ": " + str(e)}))
def get(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.status, r.read().decode()
def connect(url):
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.set_tunnel(u.hostname, u.port or 80)
    c.request("GET", u.path or "/")
    r = c.getresponse()
    return r.status, r.read().decode()
for url in ${JSON.stringify(urls)}:
    attempt(url, lambda: get(url))
    if ${tunnel ? 'True' : 'False'}:
        attempt("connect " + url, lambda: connect(url))
`;
  return runChild('python3', ['-B', '-c', script], { TROUPE_EGRESS_SOCKET: socketPath });
}
