import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { chmod, lchown, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { promisify } from 'node:util';
import { BWRAP, bwrapCommand, RESULT_FD, sandboxHandlerPath } from './bwrap.js';
import { hostSandbox, sandboxPolicy, type HostSandbox } from './capabilities.js';
import { classifyExit } from './classify.js';
import { defaultEgress, openCallEgress, withEgress, type EgressSettings } from './egress.js';
import { sandboxCommand, type SandboxCommand, type SandboxFiles } from './command.js';
import { childEnv } from './env.js';
import { SANDBOX_PATHS } from './paths.js';
import { isPythonModule } from './python.js';
import { RESULT_FILE, RUNSC, RUNSC_UID, runscCommand, runscHandlerPath, runscSpec } from './runsc.js';
import { nodeRuntime, pythonRuntime, type Runtime } from './runtimes.js';
import { seccompFilter } from './seccomp.js';
import type { SandboxRequest, SandboxResult } from './types.js';
import { OUTPUT_LIMIT_BYTES } from './types.js';
import { SandboxUnavailableError } from './unavailable.js';
import { callUids } from './uid-pool.js';

const STDERR_TAIL_BYTES = 8192;

export const SANDBOX_FILES: SandboxFiles = Object.freeze({
  node: process.execPath,
  runner: join(__dirname, 'runner.js'),
  guard: join(__dirname, 'net-guard.js'),
  pythonRunner: join(__dirname, 'python', 'runner.py'),
});

/** The runtime a handler needs, by its file: a `.py` module is Python's, anything else Node's. */
function runtimeFor(req: SandboxRequest, files: SandboxFiles, resultFile?: string): Runtime {
  if (isPythonModule(req.handlerPath)) return pythonRuntime(files, { memoryMb: req.memoryMb });
  return nodeRuntime(files, { memoryMb: req.memoryMb, storage: !!req.storageDir, resultFile });
}

/** A host that cannot run this tool answers the call with why, as a crash result, never a rejection. */
function unavailable(e: unknown): SandboxResult {
  if (e instanceof SandboxUnavailableError) return { ok: false, kind: 'crash', error: e.message };
  throw e;
}

/** Collects a stream up to `limit` bytes; calls `over` once when it goes past. */
function collect(stream: Readable, limit: number, over: () => void): () => Buffer {
  const chunks: Buffer[] = [];
  let size = 0;
  stream.on('data', (c: Buffer) => {
    size += c.length;
    if (size > limit) return over();
    chunks.push(c);
  });
  return () => Buffer.concat(chunks);
}

/** Keeps only the last bytes of a stream (stderr), for telling a heap OOM from a crash. */
function tail(stream: Readable): () => string {
  let buf = Buffer.alloc(0);
  stream.on('data', (c: Buffer) => {
    buf = Buffer.concat([buf, c]);
    if (buf.length > STDERR_TAIL_BYTES) buf = buf.subarray(buf.length - STDERR_TAIL_BYTES);
  });
  return () => buf.toString('utf8');
}

/** SIGKILL to the process group: bwrap's own; its sandbox dies with it (--die-with-parent, PID namespace). */
function kill(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}

/** bwrap reports a tool killed by a signal as exit 128 + signo; classify wants the signal. */
function signalOf(code: number | null, signal: NodeJS.Signals | null, viaBwrap: boolean): { code: number | null; signal: NodeJS.Signals | null } {
  if (!viaBwrap || signal || code === null || code <= 128) return { code, signal };
  const name = Object.entries(constants.signals).find(([, n]) => n === code - 128)?.[0] as NodeJS.Signals | undefined;
  return name ? { code: null, signal: name } : { code, signal };
}

/** The result a runsc call left in its file; past the limit it counts as too large, as on the pipe. */
function fileResult(file: string, limit: number, state: { tooLarge: boolean }): () => Buffer {
  return () => {
    try {
      if (statSync(file).size > limit) {
        state.tooLarge = true;
        return Buffer.alloc(0);
      }
      return readFileSync(file);
    } catch {
      return Buffer.alloc(0);
    }
  };
}

interface Launch {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  input: object;
  viaBwrap: boolean;
  /** runsc: the result is this file (read after exit), and exits above 128 are signals as under bwrap. */
  resultFile?: string;
}

/** Runs one launched process to its result; never rejects for anything the tool does. The wall clock starts at spawn. */
function supervise(req: SandboxRequest, l: Launch): Promise<SandboxResult> {
  const limit = req.outputLimitBytes ?? OUTPUT_LIMIT_BYTES;
  const stdio = ['pipe', 'ignore', 'pipe', l.resultFile ? 'ignore' : 'pipe', ...(l.viaBwrap ? ['pipe'] : [])] as ('pipe' | 'ignore')[];
  const child = spawn(l.file, l.args, { cwd: l.cwd, env: l.env, stdio, detached: true });
  if (l.viaBwrap) {
    const seccomp = child.stdio[4] as Writable;
    seccomp.on('error', () => undefined);
    seccomp.end(seccompFilter());
  }
  const state = { timedOut: false, tooLarge: false };
  const timer = setTimeout(() => {
    state.timedOut = true;
    kill(child);
  }, req.timeoutMs);
  const result = l.resultFile
    ? fileResult(l.resultFile, limit, state)
    : collect(child.stdio[RESULT_FD] as Readable, limit, () => {
        state.tooLarge = true;
        kill(child);
      });
  const stderr = tail(child.stderr!);
  const abort = () => kill(child);
  req.signal?.addEventListener('abort', abort, { once: true });
  child.stdin!.on('error', () => undefined); // a tool that exits before reading its input
  child.stdin!.end(JSON.stringify(l.input));
  return new Promise<SandboxResult>((resolve) => {
    child.on('error', (err) => {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', abort);
      resolve({ ok: false, kind: 'crash', error: `The sandbox could not start: ${err.message}` });
    });
    child.on('close', (rawCode, rawSignal) => {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', abort);
      const { code, signal } = signalOf(rawCode, rawSignal, l.viaBwrap || !!l.resultFile);
      resolve(classifyExit({ ...state, code, signal, result: result(), stderr: stderr(), limit, timeoutMs: req.timeoutMs, memoryMb: req.memoryMb }));
    });
  });
}

/** The storage checkout belongs to the call's uid for the call (the tool writes it as that uid). */
async function chownTree(dir: string, uid: number): Promise<void> {
  await lchown(dir, uid, uid);
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) await chownTree(p, uid);
    else await lchown(p, uid, uid);
  }
}

/** For tests and benchmarks: another runtime (the OS layer without Node's permission model), a lower process cap. */
export interface SandboxOverrides {
  runtime?: Runtime;
  maxProcesses?: number;
  /** The worker's egress rules (its configuration and metrics); the strict defaults otherwise. */
  egress?: EgressSettings;
}

/**
 * A call with internet access gets its own egress proxy on a fresh socket for
 * as long as it runs: the sandbox binds it in, and it is the call's only way
 * out (docs/agents.md, "Network").
 */
async function runBwrap(req: SandboxRequest, files: SandboxFiles, host: HostSandbox, over: SandboxOverrides): Promise<SandboxResult> {
  if (!req.internetAccess || req.egressSocket) return runBwrapCall(req, files, host, over);
  const proxy = await openCallEgress(over.egress ?? defaultEgress(), req.allowedDomains);
  try {
    return await runBwrapCall({ ...req, egressSocket: proxy.socketPath }, files, host, over);
  } finally {
    await proxy.close();
  }
}

async function runBwrapCall(req: SandboxRequest, files: SandboxFiles, host: HostSandbox, over: SandboxOverrides): Promise<SandboxResult> {
  const hostUid = host.user === 'per-call' ? callUids.take() : null;
  try {
    if (req.storageDir && hostUid !== null) await chownTree(req.storageDir, hostUid);
    let base: Runtime;
    try {
      base = over.runtime ?? runtimeFor(req, files);
    } catch (e) {
      return unavailable(e);
    }
    const runtime = req.egressSocket ? withEgress(base) : base;
    const argv = bwrapCommand(req, { runtime, hostUid, scratchMb: sandboxPolicy().scratchMb, maxProcesses: over.maxProcesses });
    const storage = req.storageDir ? SANDBOX_PATHS.storage : undefined;
    const input = { handler: sandboxHandlerPath(req), args: req.args, secrets: req.env, scratchDir: SANDBOX_PATHS.scratch, storageDir: storage, exportName: req.exportName, agentStep: req.agentStep };
    const env = { ...childEnv(req.env, SANDBOX_PATHS.scratch, storage), ...runtime.env };
    return await supervise(req, { file: argv[0], args: argv.slice(1), env, cwd: '/', input, viaBwrap: true });
  } finally {
    if (hostUid !== null) callUids.give(hostUid);
  }
}

/**
 * One call under gVisor: a bundle of its own (config.json, an empty root, a
 * result directory, runsc's state), removed with every container of it
 * after the call. Internet access goes through a per-call egress proxy, as
 * under bwrap (runBwrap).
 */
async function runRunsc(req: SandboxRequest, files: SandboxFiles, over: SandboxOverrides): Promise<SandboxResult> {
  if (!req.internetAccess || req.egressSocket) return runRunscCall(req, files, over);
  const proxy = await openCallEgress(over.egress ?? defaultEgress(), req.allowedDomains);
  try {
    return await runRunscCall({ ...req, egressSocket: proxy.socketPath }, files, over);
  } finally {
    await proxy.close();
  }
}

async function runRunscCall(req: SandboxRequest, files: SandboxFiles, over: SandboxOverrides): Promise<SandboxResult> {
  let base: Runtime;
  try {
    base = over.runtime ?? runtimeFor(req, files, RESULT_FILE);
  } catch (e) {
    return unavailable(e);
  }
  const runtime = req.egressSocket ? withEgress(base) : base;
  const bundle = await mkdtemp(join(tmpdir(), 'troupe-runsc-'));
  const id = bundle.slice(bundle.lastIndexOf('-') + 1);
  const state = join(bundle, 'state');
  const out = join(bundle, 'out');
  try {
    await mkdir(join(bundle, 'root'), { mode: 0o755 });
    await mkdir(state, { mode: 0o700 });
    await mkdir(out);
    await chmod(out, 0o777); // written by the container's uid
    await chmod(bundle, 0o755);
    const storage = req.storageDir ? SANDBOX_PATHS.storage : undefined;
    if (req.storageDir) await chownTree(req.storageDir, RUNSC_UID);
    const env = { ...childEnv(req.env, SANDBOX_PATHS.scratch, storage), ...runtime.env };
    await writeFile(join(bundle, 'config.json'), JSON.stringify(runscSpec(req, { runtime, scratchMb: sandboxPolicy().scratchMb, resultDir: out, env })), { mode: 0o600 });
    const argv = runscCommand(state, bundle, `troupe-${id}`, !!req.egressSocket);
    const input = { handler: runscHandlerPath(req), args: req.args, secrets: req.env, scratchDir: SANDBOX_PATHS.scratch, storageDir: storage, exportName: req.exportName, agentStep: req.agentStep };
    return await supervise(req, { file: argv[0], args: argv.slice(1), env: {}, cwd: '/', input, viaBwrap: false, resultFile: join(out, 'result') });
  } finally {
    // A killed `runsc run` leaves its sandbox and gofer: delete --force stops them.
    await promisify(execFile)(RUNSC, ['--rootless', '--root', state, 'delete', '--force', `troupe-${id}`], { timeout: 10_000 }).catch(() => undefined);
    await rm(bundle, { recursive: true, force: true });
  }
}

/**
 * Runs one tool call (or entrypoint evaluation) in a fresh sandbox and
 * resolves with its result; never rejects for anything the tool does.
 */
export function runInSandbox(req: SandboxRequest, files: SandboxFiles = SANDBOX_FILES, over: SandboxOverrides = {}): Promise<SandboxResult> {
  const host = hostSandbox();
  if (host.level === 'runsc') return runRunsc(req, files, over);
  if (sandboxPolicy().mode === 'runsc') {
    return Promise.resolve({ ok: false, kind: 'crash', error: `The gVisor sandbox (${RUNSC}) does not work on this host: ${host.bwrapError}` });
  }
  if (host.level === 'bwrap-seccomp') return runBwrap(req, files, host, over);
  if (sandboxPolicy().mode === 'bwrap') {
    return Promise.resolve({ ok: false, kind: 'crash', error: `The sandbox (${BWRAP}) is not available on this host, so tools cannot run.` });
  }
  let cmd: SandboxCommand;
  try {
    cmd = sandboxCommand(req, host, files);
  } catch (e) {
    return Promise.resolve(unavailable(e));
  }
  const input = { handler: req.handlerPath, args: req.args, secrets: req.env, scratchDir: req.scratchDir, storageDir: req.storageDir, exportName: req.exportName, agentStep: req.agentStep };
  return supervise(req, { file: cmd.file, args: cmd.args, env: childEnv(req.env, req.scratchDir, req.storageDir), cwd: req.rootDir, input, viaBwrap: false });
}
