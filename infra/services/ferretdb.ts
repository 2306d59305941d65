import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { onPath } from './process.js';

/** infra/ferretdb, found from either the sources or the compiled dist/ tree. */
export function ferretdbSourceDir(): string {
  for (const candidate of [resolve(__dirname, '../ferretdb'), resolve(__dirname, '../../../infra/ferretdb')]) {
    if (existsSync(join(candidate, 'main.go'))) return candidate;
  }
  throw new Error('infra/ferretdb/main.go not found');
}

/**
 * Builds the FerretDB wrapper once per source version. The binary's name
 * carries a hash of main.go, go.mod and go.sum, so an unchanged wrapper is
 * reused at once and a changed one is rebuilt.
 */
export function buildFerretdb(log: (msg: string) => void): string {
  const dir = ferretdbSourceDir();
  const hash = createHash('sha256');
  for (const f of ['main.go', 'go.mod', 'go.sum']) hash.update(readFileSync(join(dir, f)));
  const binDir = join(dir, '.bin');
  const bin = join(binDir, `troupe-ferretdb-${hash.digest('hex').slice(0, 12)}`);
  if (existsSync(bin)) return bin;
  const go = onPath('go');
  if (!go) throw new Error('Go is not on PATH, so FerretDB cannot be built. Install Go, or set MONGODB_URL to a MongoDB server.');
  mkdirSync(binDir, { recursive: true });
  log('building the local MongoDB-wire server (FerretDB v1, SQLite backend); this happens once and takes a minute or two');
  const tmp = `${bin}.tmp-${process.pid}`;
  const attempts: NodeJS.ProcessEnv[] = [
    { GOFLAGS: '-mod=mod' },
    // FerretDB v1.24 was released with Go 1.22-1.24; a much newer local Go may refuse it.
    { GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'go1.24.4' },
  ];
  let lastError = '';
  for (const extra of attempts) {
    const r = spawnSync(go, ['build', '-trimpath', '-o', tmp, '.'], {
      cwd: dir,
      env: { ...process.env, ...extra },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (r.status === 0) {
      renameSync(tmp, bin);
      // Binaries of older wrapper versions are dead weight (~40 MB each).
      for (const f of readdirSync(binDir)) if (join(binDir, f) !== bin) rmSync(join(binDir, f), { force: true });
      return bin;
    }
    lastError = `${r.stderr}${r.stdout}`.trim().split('\n').slice(-20).join('\n');
    log(`FerretDB build with ${JSON.stringify(extra)} failed:\n${lastError}`);
  }
  throw new Error(`FerretDB could not be built:\n${lastError}`);
}
