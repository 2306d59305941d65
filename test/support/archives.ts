import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { constants, crc32, createGzip, deflateRawSync } from 'node:zlib';
import { pack as tarPack } from 'tar-stream';
import type { Harness } from './harness.js';

/** One tar entry to build; hostile shapes (links out, `..`, devices) are allowed on purpose. */
export interface TarEntry {
  name: string;
  type?: 'file' | 'directory' | 'symlink' | 'link' | 'fifo';
  content?: string | Buffer;
  linkname?: string;
  /** A file of this many zero bytes, streamed (for bombs) instead of `content`. */
  zeros?: number;
}

const ZERO_CHUNK = Buffer.alloc(1024 * 1024);

async function writeEntry(pack: ReturnType<typeof tarPack>, e: TarEntry): Promise<void> {
  const type = e.type ?? 'file';
  if (e.zeros !== undefined) {
    await new Promise<void>((resolve, reject) => {
      const sink = pack.entry({ name: e.name, size: e.zeros, type: 'file' }, (err) => (err ? reject(err) : resolve()));
      let left = e.zeros!;
      const pump = () => {
        while (left > 0) {
          const n = Math.min(left, ZERO_CHUNK.length);
          left -= n;
          if (!sink.write(n === ZERO_CHUNK.length ? ZERO_CHUNK : ZERO_CHUNK.subarray(0, n))) return void sink.once('drain', pump);
        }
        sink.end(undefined);
      };
      pump();
    });
    return;
  }
  await new Promise<void>((resolve, reject) => {
    const body = type === 'file' ? Buffer.from(e.content ?? '') : undefined;
    const header = { name: e.name, type, linkname: e.linkname, mode: type === 'directory' ? 0o755 : 0o644 };
    const cb = (err?: Error | null) => (err ? reject(err) : resolve());
    if (body) pack.entry(header, body, cb);
    else pack.entry(header, cb).end(undefined);
  });
}

/**
 * Builds a .tar.gz in memory, streaming so a multi-hundred-MiB bomb entry never sits in memory uncompressed.
 * Level 9 keeps bomb entries small; an archive whose subject is not its size can ask for level 1 (100,000
 * empty entries: 51 MB of tar, about 20 times faster to gzip at level 1).
 */
export async function tarGz(entries: TarEntry[], { level = 9 }: { level?: number } = {}): Promise<Buffer> {
  const pack = tarPack();
  const gzip = createGzip({ level });
  const out: Buffer[] = [];
  gzip.on('data', (c: Buffer) => out.push(c));
  const done = new Promise<void>((resolve, reject) => {
    gzip.on('end', resolve);
    gzip.on('error', reject);
  });
  pack.on('data', (c) => {
    if (!gzip.write(c as Buffer)) {
      pack.pause();
      gzip.once('drain', () => pack.resume());
    }
  });
  pack.on('end', () => gzip.end());
  for (const e of entries) await writeEntry(pack, e);
  pack.finalize();
  await done;
  return Buffer.concat(out);
}

/**
 * A gzip stream of raw zeros: not even a tar, it only inflates. One member, as gzip would write it, but
 * built from one compressed MiB: after a full flush deflate refers to nothing before it, so that MiB's
 * compressed bytes, repeated, inflate to the MiB repeated. Compressing 512 MiB of zeros at level 9 took
 * the test process about 10 s of CPU on CI's 2 cores, which the server under test also needed.
 */
export function gzipBomb(bytes: number): Buffer {
  const MIB = 1024 * 1024;
  const zeros = Buffer.alloc(Math.min(bytes, MIB));
  const flushed = (n: number) => deflateRawSync(zeros.subarray(0, n), { level: 9, finishFlush: constants.Z_FULL_FLUSH });
  const block = flushed(zeros.length);
  const parts = [Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 0xff])];
  let crc = 0;
  for (let left = bytes; left > 0; left -= MIB) {
    const n = Math.min(left, MIB);
    parts.push(n === MIB ? block : flushed(n));
    crc = crc32(zeros.subarray(0, n), crc);
  }
  // The last block (empty, final), then the trailer: CRC-32 and length mod 2^32, little-endian.
  parts.push(deflateRawSync(Buffer.alloc(0)));
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE(bytes % 2 ** 32, 4);
  parts.push(trailer);
  return Buffer.concat(parts);
}

export function sha256(buf: Buffer): string {
  return createHash('sha256').update(buf).digest('hex');
}

/** Every file under `dir` as tar entries, paths relative to it. */
export async function entriesOfDir(dir: string, root = dir): Promise<TarEntry[]> {
  const out: TarEntry[] = [];
  for (const d of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, d.name);
    if (d.isDirectory()) out.push(...(await entriesOfDir(full, root)));
    else if (d.isFile()) out.push({ name: relative(root, full).split('\\').join('/'), content: await readFile(full) });
  }
  return out;
}

export interface Reservation {
  source_snapshot_id: string;
  upload_url: string;
  upload_headers: Record<string, string>;
  expires_at: string;
  status: string;
}

export async function reserve(h: Harness, archive: Buffer): Promise<Reservation> {
  const res = await h.api('/v1/source-snapshots', { method: 'POST', json: { format: 'tar.gz', sha256: sha256(archive), size_bytes: archive.length } });
  if (res.status !== 201) throw new Error(`reserve failed: ${res.status} ${await res.text()}`);
  return (await res.json()) as Reservation;
}

/** Reserve, upload with exactly the returned headers, finalize; returns the ready snapshot id. */
export async function readySnapshot(h: Harness, archive: Buffer): Promise<string> {
  const r = await reserve(h, archive);
  const up = await fetch(r.upload_url.replace(h.running.core.config.publicUrl, h.baseUrl), { method: 'PUT', headers: r.upload_headers, body: archive });
  if (up.status !== 200) throw new Error(`upload failed: ${up.status} ${await up.text()}`);
  const fin = await h.api(`/v1/source-snapshots/${r.source_snapshot_id}/finalize`, { method: 'POST' });
  const body = (await fin.json()) as { status: string; failure_reason: string | null };
  if (body.status !== 'ready') throw new Error(`finalize failed: ${body.failure_reason}`);
  return r.source_snapshot_id;
}

/** Creates an agent from in-memory files; returns the raw response so tests can assert refusals too. */
export async function createAgentFrom(h: Harness, manifest: unknown, entries: TarEntry[], name = 'test-agent'): Promise<Response> {
  const snap = await readySnapshot(h, await tarGz(entries));
  return h.api('/v1/agents', { method: 'POST', json: { name, manifest, source: { type: 'upload', source_snapshot_id: snap } } });
}

/** A minimal valid agent: scripted model, one external and one custom tool. */
export function minimalAgent(): { manifest: Record<string, unknown>; entries: TarEntry[] } {
  const manifest = {
    name: 'minimal',
    sdk: 'troupe-js@1',
    entrypoint: 'agent.js:agent',
    sandbox: { secrets: ['WEATHER_KEY'], internet_access: false },
    custom_tools: [
      { name: 'get_weather', path: 'tools/get_weather.json', kind: 'external', timeout_seconds: 30 },
      { name: 'add', path: 'tools/add.js' },
    ],
    llm_options: [{ id: 'script', provider: 'scripted', script: 'script.json' }],
  };
  const entries: TarEntry[] = [
    { name: 'troupe.json', content: JSON.stringify(manifest) },
    { name: 'agent.js', content: 'exports.agent = { instructions: "Be brief." };\n' },
    { name: 'tools/', type: 'directory' },
    { name: 'tools/get_weather.json', content: JSON.stringify({ name: 'get_weather', description: 'Weather for a city.', input_schema: 'get_weather.input.json', output_schema: 'get_weather.output.json' }) },
    { name: 'tools/get_weather.input.json', content: JSON.stringify({ type: 'object', required: ['city'], properties: { city: { type: 'string' } } }) },
    { name: 'tools/get_weather.output.json', content: JSON.stringify({ type: 'object', required: ['temp_c'], properties: { temp_c: { type: 'number' } } }) },
    { name: 'tools/add.js', content: 'exports.handler = async ({ a, b }) => ({ sum: a + b });\n' },
    { name: 'script.json', content: JSON.stringify({ turns: [{ tool_calls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] }, { text: 'It is mild.' }] }) },
  ];
  return { manifest, entries };
}
