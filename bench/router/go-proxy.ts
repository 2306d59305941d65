/**
 * The Go floor (go-proxy/main.go): built with the Go standard library only
 * into the git-ignored bench/.goproxy when `go` is on the PATH, rebuilt when
 * its source is newer than the binary, and skipped with a note otherwise.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { printedOrigin } from './child-origin.js';

const SRC = resolve(__dirname, '../../../bench/router/go-proxy/main.go');
const BIN = resolve(__dirname, '../../../bench/.goproxy/go-proxy');

/** The binary's path, or null with the reason when Go is not installed or the build fails. */
function ensureGoProxy(): { bin: string } | { skipped: string } {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
  } catch {
    return { skipped: '`go` is not on the PATH' };
  }
  if (existsSync(BIN) && statSync(BIN).mtimeMs >= statSync(SRC).mtimeMs) return { bin: BIN };
  process.stderr.write('[bench] building the Go reverse proxy into bench/.goproxy (standard library only)\n');
  mkdirSync(join(BIN, '..'), { recursive: true });
  try {
    // No module, no network: GOPROXY=off, and the installed toolchain whatever a parent go.mod might ask for.
    execFileSync('go', ['build', '-o', BIN, SRC], { stdio: 'inherit', env: { ...process.env, GOTOOLCHAIN: 'local', GOPROXY: 'off', GOFLAGS: '' } });
  } catch (e) {
    return { skipped: `go build failed: ${(e as Error).message}` };
  }
  return { bin: BIN };
}

/** Starts the Go proxy in front of `upstream`; resolves to its process and origin, or to the reason it is skipped. */
export async function startGoProxy(upstream: string): Promise<{ child: ChildProcess; url: string } | { skipped: string }> {
  const built = ensureGoProxy();
  if ('skipped' in built) return built;
  const child = spawn(built.bin, [upstream], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr!.on('data', (d: Buffer) => process.stderr.write(`[go-proxy] ${d}`));
  return { child, url: await printedOrigin(child) };
}
