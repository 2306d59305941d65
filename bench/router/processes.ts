/**
 * The router bench's processes: local Redis and MongoDB-wire, the fake
 * upstream, a web and a router process (and a baseline router from another
 * build), the floors (proxies that only forward) and the peers (LiteLLM,
 * Portkey), with the pid behind each path for the CPU and settling figures.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { startLocalServices } from '../../infra/services/local-services.js';
import { freePort } from '../../infra/services/process.js';
import { BENCH_LIMITS } from '../support/stack.js';
import { inspectorUrl } from './alloc-profile.js';
import { printedOrigin } from './child-origin.js';
import { startGoProxy } from './go-proxy.js';
import { startLitellm } from './litellm.js';
import type { Origins, Peers } from './paths.js';
import { startPortkey } from './portkey.js';
import { startOtlpSink, tracingEnv } from '../support/otlp-sink.js';

/** 0 = unlimited: the router skips its rate check (and that Redis round trip), to measure what the check costs. */
const NO_ROUTING_LIMITS = { TROUPE_RATE_LIMIT_ROUTING_PER_MIN: '0', TROUPE_RATE_LIMIT_ROUTING_KEY_PER_MIN: '0' };
/** --token-limits: limits no call reaches, so every call is checked and counted and none refused (the measured router only). */
const TOKEN_LIMITS = { TROUPE_TOKEN_LIMIT_ROUTING_PER_MIN: '1000000000', TROUPE_TOKEN_LIMIT_ROUTING_KEY_PER_MIN: '1000000000' };

export interface StackOptions {
  /** A dist directory whose router joins the rounds as `baseline`, started with `baselineNodeArgs`. */
  baseline?: string;
  baselineNodeArgs: string[];
  routerNodeArgs: string[];
  /** The router runs with --cpu-prof into `profDir`. */
  profile: boolean;
  /** The router runs with an inspector, for the allocation sampler. */
  alloc: boolean;
  noRateLimit: boolean;
  /** Token limits on in the measured router, off in the baseline: run with --baseline dist to see what they add. */
  tokenLimits?: boolean;
  floors: boolean;
  leanNet: boolean;
  litellm: boolean;
  portkey: boolean;
  /** Two more routers of this build join the rounds, tracing every call and one in ten, exporting to a sink here. */
  tracing: boolean;
}

export interface BenchStack {
  origins: Origins;
  /** The web API's origin, and the keys the bench bootstrapped. */
  web: string;
  apiKey: string;
  routingKey: string;
  routerProc: ChildProcess;
  routerInspector: Promise<string> | null;
  profDir: string | null;
  /** The router processes whose CPU per call is reported, by path name. */
  cpuPids: Partial<Record<keyof Peers, number>>;
  /** The process behind each path (the fake upstream for `direct`): what settling waits for, and whose spill is measured. */
  pathPids: Partial<Record<keyof Peers, number>>;
  /** Resolves once every started process answers. */
  ready(): Promise<void>;
  /** Stops every process (waiting for the router, whose CPU profile is written as it exits) and the services. */
  stop(): Promise<void>;
}

function spawnNode(script: string, args: string[], env: NodeJS.ProcessEnv, nodeArgs: string[] = [], dir = __dirname): ChildProcess {
  const child = spawn(process.execPath, [...nodeArgs, join(dir, script), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr!.on('data', (d: Buffer) => process.stderr.write(`[${script}] ${d}`));
  return child;
}

async function waitOk(url: string, tries = 200): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if ((await fetch(url).catch(() => null))?.ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${url} never became ready`);
}

export async function startBenchStack(opts: StackOptions): Promise<BenchStack> {
  const services = await startLocalServices({ log: () => undefined });
  const fake = spawnNode('fake-server.js', [], process.env);
  const fakeUrl = await printedOrigin(fake);
  const [webPort, routerPort] = [await freePort(), await freePort()];
  const apiKey = `tr_sk_bench_${randomBytes(12).toString('hex')}`;
  const routingKey = `tr_rk_bench_${randomBytes(12).toString('hex')}`;
  const env = { ...process.env, MONGODB_URL: services.mongodbUrl, REDIS_URL: services.redisUrl, TROUPE_MONGODB_DB: `bench_${randomBytes(4).toString('hex')}`, TROUPE_BOOTSTRAP_API_KEY: apiKey, TROUPE_BOOTSTRAP_ROUTING_KEY: routingKey, PORT: String(webPort), ROUTER_PORT: String(routerPort), LOG_LEVEL: 'warn', TROUPE_MODELS_ALLOW_PRIVATE: '1', ...BENCH_LIMITS, ...(opts.noRateLimit ? NO_ROUTING_LIMITS : {}) }; // the fake upstream is plain HTTP on loopback
  const profDir = opts.profile ? mkdtempSync(join(tmpdir(), 'router-prof-')) : null;
  const routerProc = spawnNode('../../src/main.js', ['router'], opts.tokenLimits ? { ...env, ...TOKEN_LIMITS } : env, [...opts.routerNodeArgs, ...(profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []), ...(opts.alloc ? ['--inspect=127.0.0.1:0'] : [])]);
  const routerInspector = opts.alloc ? inspectorUrl(routerProc) : null;
  const procs = [fake, spawnNode('../../src/main.js', ['web'], env), routerProc];
  const cpuPids: BenchStack['cpuPids'] = { router: routerProc.pid };
  const pathPids: BenchStack['pathPids'] = { router: routerProc.pid, direct: fake.pid };
  // If this script dies without its cleanup (output piped into `head`, an uncaught error), its children go too.
  process.once('exit', () => procs.forEach((p) => p.exitCode === null && p.kill('SIGTERM')));
  const baselinePort = await freePort();
  if (opts.baseline) {
    const b = spawnNode('src/main.js', ['router'], { ...env, ROUTER_PORT: String(baselinePort) }, opts.baselineNodeArgs, opts.baseline);
    procs.push(b);
    cpuPids.baseline = pathPids.baseline = b.pid;
  }
  const origins: Origins = { fake: fakeUrl, router: `http://127.0.0.1:${routerPort}`, baseline: opts.baseline ? `http://127.0.0.1:${baselinePort}` : null, traced: null, traced10: null, floor: null, lean: null, leanNet: null, relay: null, go: null, litellm: null, portkey: null };
  const sink = opts.tracing ? await startOtlpSink() : null;
  if (sink) {
    for (const [name, mode] of [['traced', '100'], ['traced10', '10']] as const) {
      const port = await freePort();
      const t = spawnNode('../../src/main.js', ['router'], { ...env, ROUTER_PORT: String(port), ...tracingEnv(mode, sink.url) }, opts.routerNodeArgs);
      procs.push(t);
      cpuPids[name] = pathPids[name] = t.pid;
      origins[name] = `http://127.0.0.1:${port}`;
    }
  }
  if (opts.floors) {
    const f = spawnNode('floor-proxy.js', [fakeUrl], process.env);
    const t = spawnNode('tcp-relay.js', [fakeUrl], process.env);
    const l = spawnNode('lean-proxy.js', [fakeUrl], process.env);
    procs.push(f, t, l);
    cpuPids.floor = pathPids.floor = f.pid;
    cpuPids.relay = pathPids.relay = t.pid;
    cpuPids.lean = pathPids.lean = l.pid;
    [origins.floor, origins.relay, origins.lean] = await Promise.all([printedOrigin(f), printedOrigin(t), printedOrigin(l)]);
    if (opts.leanNet) {
      const ln = spawnNode('lean-proxy.js', [fakeUrl, '--net'], process.env);
      procs.push(ln);
      cpuPids.leanNet = pathPids.leanNet = ln.pid;
      origins.leanNet = await printedOrigin(ln);
    }
    const g = await startGoProxy(fakeUrl);
    if ('skipped' in g) console.log(`Go reverse proxy skipped: ${g.skipped}`);
    else {
      procs.push(g.child);
      cpuPids.go = pathPids.go = g.child.pid;
      origins.go = g.url;
    }
  }
  const [litellmPort, portkeyPort] = [await freePort(), await freePort()];
  if (opts.litellm) {
    procs.push(startLitellm(litellmPort, fakeUrl));
    pathPids.litellm = procs.at(-1)!.pid;
    origins.litellm = `http://127.0.0.1:${litellmPort}`;
  }
  if (opts.portkey) {
    procs.push(startPortkey(portkeyPort));
    pathPids.portkey = procs.at(-1)!.pid;
    origins.portkey = `http://127.0.0.1:${portkeyPort}`;
  }
  const web = `http://127.0.0.1:${webPort}`;
  const { baseline, litellm, portkey } = origins;
  return {
    origins, web, apiKey, routingKey, routerProc, routerInspector, profDir, cpuPids, pathPids,
    ready: async () => {
      await Promise.all([waitOk(`${web}/healthz`), waitOk(`${origins.router}/healthz`), baseline ? waitOk(`${baseline}/healthz`) : null, origins.traced ? waitOk(`${origins.traced}/healthz`) : null, origins.traced10 ? waitOk(`${origins.traced10}/healthz`) : null, litellm ? waitOk(`${litellm}/health/liveliness`, 1200) : null, portkey ? waitOk(`${portkey}/`, 600) : null]);
    },
    stop: async () => {
      const routerExit = new Promise((r) => routerProc.once('exit', r));
      for (const p of procs) p.kill('SIGTERM');
      await routerExit; // the CPU profile is written as the router exits
      if (sink) console.log(`tracing: the OTLP sink received ${sink.requests()} requests, ${(sink.bytes() / 1024).toFixed(0)} KiB`);
      await sink?.close();
      await services.stop();
    },
  };
}
