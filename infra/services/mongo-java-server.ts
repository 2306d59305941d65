import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { onPath } from './process.js';

/** infra/mongo-java-server, found from either the sources or the compiled dist/ tree. */
export function mongoJavaServerSourceDir(): string {
  for (const candidate of [resolve(__dirname, '../mongo-java-server'), resolve(__dirname, '../../../infra/mongo-java-server')]) {
    if (existsSync(join(candidate, 'pom.xml'))) return candidate;
  }
  throw new Error('infra/mongo-java-server/pom.xml not found');
}

/** pom.xml and every file under src/, in a stable order. */
function sourceFiles(dir: string): string[] {
  const out = [join(dir, 'pom.xml')];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(p);
    }
  };
  walk(join(dir, 'src'));
  return out;
}

function requireTool(cmd: string): string {
  const found = onPath(cmd);
  if (!found) {
    throw new Error(
      `${cmd} is not on PATH, so the local MongoDB-wire server (mongo-java-server) cannot be built. ` +
        'Install Java 17+ and Maven (Debian: apt-get install -y openjdk-17-jdk-headless maven), ' +
        'set TROUPE_LOCAL_MONGO=ferretdb, or set MONGODB_URL to a MongoDB server.',
    );
  }
  return found;
}

/**
 * Builds the launcher jar once per source version. The jar's name carries a
 * hash of pom.xml and src/, so an unchanged launcher is reused at once and a
 * changed one is rebuilt. The build runs in a copy of the sources, so two
 * concurrent first runs never share a Maven target/ directory.
 */
export function buildMongoJavaServer(log: (msg: string) => void): { java: string; jar: string } {
  const dir = mongoJavaServerSourceDir();
  const hash = createHash('sha256');
  for (const f of sourceFiles(dir)) hash.update(relative(dir, f)).update('\0').update(readFileSync(f));
  const binDir = join(dir, '.bin');
  const jar = join(binDir, `troupe-mongo-java-server-${hash.digest('hex').slice(0, 12)}.jar`);
  const java = requireTool('java');
  if (existsSync(jar)) return { java, jar };
  const mvn = requireTool('mvn');
  log('building the local MongoDB-wire server (mongo-java-server, H2 backend) with Maven; this happens once and may download for a minute');
  const work = mkdtempSync(join(tmpdir(), 'troupe-mjs-build-'));
  try {
    cpSync(join(dir, 'pom.xml'), join(work, 'pom.xml'));
    cpSync(join(dir, 'src'), join(work, 'src'), { recursive: true });
    const r = spawnSync(mvn, ['-q', '-B', '-DskipTests', 'package'], { cwd: work, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    if (r.status !== 0) {
      const tail = `${r.stdout}${r.stderr}`.trim().split('\n').slice(-30).join('\n');
      throw new Error(`Maven could not build infra/mongo-java-server (exit ${r.status ?? r.signal}):\n${tail}`);
    }
    mkdirSync(binDir, { recursive: true });
    const tmp = `${jar}.tmp-${process.pid}`;
    cpSync(join(work, 'target', 'troupe-mongo-java-server.jar'), tmp);
    renameSync(tmp, jar);
    // Jars of older launcher versions are dead weight (~6 MB each).
    for (const f of readdirSync(binDir)) if (join(binDir, f) !== jar && !f.includes('.tmp-')) rmSync(join(binDir, f), { force: true });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return { java, jar };
}

/**
 * JVM flags for a small shared machine: the serial collector (no GC threads
 * competing with Troupe's own processes), a bounded heap, and an exit rather
 * than a limp on out-of-memory.
 */
export function mongoJavaServerArgs(jar: string, port: number, store: { file: string } | 'memory'): string[] {
  return [
    '-XX:+UseSerialGC',
    '-Xms64m',
    '-Xmx1g',
    '-XX:+ExitOnOutOfMemoryError',
    '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn',
    '-jar', jar,
    '--host', '127.0.0.1',
    '--port', String(port),
    ...(store === 'memory' ? ['--memory'] : ['--file', store.file]),
  ];
}
