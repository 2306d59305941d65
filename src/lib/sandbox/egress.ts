import { randomBytes } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { parseRedisTarget } from '../redis/target.js';
import { OwnAddresses, type EgressRefusalReason, type OwnEndpoint } from '../net/egress-guard.js';
import { startEgressProxy, type EgressProxy } from '../net/egress-proxy.js';
import type { Resolver } from '../net/resolver.js';
import { SANDBOX_PATHS } from './paths.js';
import type { Runtime } from './runtimes.js';

/** How a worker's sandboxed calls get out: one egress proxy per call with internet access. */
export interface EgressSettings {
  /** Directory of the per-call sockets (created 0711: others may connect to a socket they know, not list them). */
  dir: string;
  /** TROUPE_EGRESS_ALLOW_PRIVATE. */
  allowPrivate: boolean;
  own: OwnAddresses;
  resolver?: Resolver;
  /** The refusals metric. */
  onRefusal?: (reason: EgressRefusalReason) => void;
}

/** Where a call's sandbox finds its proxy (the sandbox binds the socket in) and the variable naming it. */
export const EGRESS_SOCKET_ENV = 'TROUPE_EGRESS_SOCKET';

/** Without a worker's settings (tests, the entrypoint's publish run): the strict rules and this host's addresses. */
export function defaultEgress(): EgressSettings {
  return { dir: join(tmpdir(), 'troupe-egress'), allowPrivate: false, own: new OwnAddresses([]) };
}

/**
 * Troupe's own services as the egress guard refuses them: every Redis node and
 * MongoDB host:port in the configuration, and the listeners' ports on whatever
 * address reaches this machine. By port, so that a local run with the
 * public-address rule lifted still reaches a fake on another loopback port.
 * A `mongodb+srv://` name stands for hosts found through SRV records, which are
 * not followed; those hosts are refused only when they are private.
 */
export function ownEndpoints(c: { redisUrl: string; mongodbUrl: string; ports: readonly number[] }): OwnEndpoint[] {
  const out: OwnEndpoint[] = [];
  for (const n of parseRedisTarget(c.redisUrl).nodes) out.push({ host: n.host, port: n.port });
  out.push(...mongoHosts(c.mongodbUrl));
  for (const port of c.ports) if (port > 0) out.push({ host: '*', port });
  return out;
}

function mongoHosts(url: string): OwnEndpoint[] {
  const m = /^mongodb(\+srv)?:\/\/(?:[^@/]*@)?([^/?]+)/i.exec(url);
  if (!m) return [];
  return m[2].split(',').map((spec) => {
    const hp = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(spec);
    const host = (hp?.[1] ?? spec).replace(/^\[|\]$/g, '');
    return { host, port: hp?.[2] ? Number(hp[2]) : 27017 };
  });
}

/** Starts a call's proxy on a fresh socket path; the caller closes it when the call ends. */
export async function openCallEgress(settings: EgressSettings, allowedDomains?: readonly string[]): Promise<EgressProxy> {
  await mkdir(settings.dir, { recursive: true, mode: 0o711 });
  await chmod(settings.dir, 0o711);
  const socketPath = join(settings.dir, `${randomBytes(9).toString('base64url')}.sock`);
  return startEgressProxy(socketPath, { allowedDomains, allowPrivate: settings.allowPrivate, own: settings.own, resolver: settings.resolver, onRefusal: settings.onRefusal });
}

/** Where the bridges and undici are bound inside the sandbox (read-only). */
export const EGRESS_SANDBOX_FILES = Object.freeze({
  nodeBridge: '/run/troupe/egress-bridge.js',
  pythonBridge: '/run/troupe/egress_bridge.py',
  undici: '/run/troupe/undici',
});

/** Host files of the bridges; undici by its real path, the folder every file of it is loaded from. */
function hostFiles(): { nodeBridge: string; pythonBridge: string; undici: string } {
  return {
    nodeBridge: join(__dirname, 'egress-bridge.js'),
    pythonBridge: join(__dirname, 'python', 'egress_bridge.py'),
    undici: dirname(realpathSync(require.resolve('undici/package.json'))),
  };
}

/**
 * A runtime with the call's way out: the bridges and undici bound read-only,
 * TROUPE_EGRESS_SOCKET naming the bound socket, and for Node the bridge
 * preloaded (readable under Node's permission model when that is on). A Python
 * runner imports egress_bridge from /run/troupe and calls start() when the
 * variable is set.
 */
export function withEgress(runtime: Runtime): Runtime {
  const host = hostFiles();
  const env = { ...runtime.env, [EGRESS_SOCKET_ENV]: SANDBOX_PATHS.egressSocket, TROUPE_EGRESS_UNDICI: EGRESS_SANDBOX_FILES.undici };
  const files = { ...runtime.files, [EGRESS_SANDBOX_FILES.nodeBridge]: host.nodeBridge, [EGRESS_SANDBOX_FILES.pythonBridge]: host.pythonBridge, [EGRESS_SANDBOX_FILES.undici]: host.undici };
  const [bin, ...rest] = runtime.argv;
  if (!basename(bin).startsWith('node')) return { ...runtime, env, files };
  const permissioned = rest.some((a) => a === '--permission' || a === '--experimental-permission');
  const reads = permissioned ? [`--allow-fs-read=${EGRESS_SANDBOX_FILES.nodeBridge}`, `--allow-fs-read=${EGRESS_SANDBOX_FILES.undici}`] : [];
  return { ...runtime, env, files, argv: [bin, ...reads, '--require', EGRESS_SANDBOX_FILES.nodeBridge, ...rest] };
}
