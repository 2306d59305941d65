import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { hostSandbox } from './capabilities.js';
import { classifyExit } from './classify.js';
import { sandboxCommand, SandboxUnavailableError, type SandboxCommand, type SandboxFiles } from './command.js';
import { childEnv } from './env.js';
import type { SandboxRequest, SandboxResult } from './types.js';
import { OUTPUT_LIMIT_BYTES } from './types.js';

const STDERR_TAIL_BYTES = 8192;

export const SANDBOX_FILES: SandboxFiles = Object.freeze({
  node: process.execPath,
  runner: join(__dirname, 'runner.js'),
  guard: join(__dirname, 'net-guard.js'),
  pythonRunner: join(__dirname, 'python', 'runner.py'),
});

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

/** SIGKILL to the process group (the wrappers exec, so it is one process, but a group kill leaves nothing behind). */
function kill(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}

/**
 * Runs one tool call in a fresh child process and resolves with its result;
 * never rejects for anything the tool does. The wall clock starts at spawn.
 */
export function runInSandbox(req: SandboxRequest, files: SandboxFiles = SANDBOX_FILES): Promise<SandboxResult> {
  let cmd: SandboxCommand;
  try {
    cmd = sandboxCommand(req, hostSandbox(), files);
  } catch (e) {
    if (e instanceof SandboxUnavailableError) return Promise.resolve({ ok: false, kind: 'crash', error: e.message });
    throw e;
  }
  const limit = req.outputLimitBytes ?? OUTPUT_LIMIT_BYTES;
  const child = spawn(cmd.file, cmd.args, { cwd: req.rootDir, env: childEnv(req.env, req.scratchDir, req.storageDir), stdio: ['pipe', 'ignore', 'pipe', 'pipe'], detached: true });
  const state = { timedOut: false, tooLarge: false };
  const timer = setTimeout(() => {
    state.timedOut = true;
    kill(child);
  }, req.timeoutMs);
  const result = collect(child.stdio[3] as Readable, limit, () => {
    state.tooLarge = true;
    kill(child);
  });
  const stderr = tail(child.stderr!);
  const abort = () => kill(child);
  req.signal?.addEventListener('abort', abort, { once: true });
  child.stdin!.on('error', () => undefined); // a tool that exits before reading its input
  child.stdin!.end(JSON.stringify({ handler: req.handlerPath, args: req.args, secrets: req.env, scratchDir: req.scratchDir, storageDir: req.storageDir, exportName: req.exportName }));
  return new Promise<SandboxResult>((resolve) => {
    child.on('error', (err) => {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', abort);
      resolve({ ok: false, kind: 'crash', error: `The sandbox could not start: ${err.message}` });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', abort);
      resolve(classifyExit({ ...state, code, signal, result: result(), stderr: stderr(), limit, timeoutMs: req.timeoutMs, memoryMb: req.memoryMb }));
    });
  });
}
