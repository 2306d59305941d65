import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { pack } from 'tar-stream';
import type { Agent, AgentVersion, Manifest, Snapshot, TroupeClient } from './client.js';

/** Never part of an archive: version control and local dependency caches the sandbox does not use. */
const SKIPPED = new Set(['.git', 'node_modules', '.DS_Store']);

/** Upload chunk size: small enough for a smooth progress bar, large enough to cost nothing. */
const CHUNK = 64 * 1024;

export interface PackedFolder {
  archive: Buffer;
  sha256: string;
  size_bytes: number;
  files: number;
}

/** The folder as a reproducible tar.gz (sorted names, fixed mtime), so an unchanged folder hashes the same. */
export async function packFolder(dir: string): Promise<PackedFolder> {
  const root = resolve(dir);
  const walk = (d: string): string[] =>
    readdirSync(d, { withFileTypes: true })
      .filter((e) => !SKIPPED.has(e.name))
      .sort((a, b) => (a.name < b.name ? -1 : 1))
      .flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : e.isFile() ? [join(d, e.name)] : []));
  const files = walk(root);
  const p = pack();
  const chunks: Buffer[] = [];
  p.on('data', (c: unknown) => void chunks.push(c as Buffer));
  const ended = new Promise<void>((r, j) => {
    p.on('end', () => r());
    p.on('error', j);
  });
  for (const file of files) {
    const mode = statSync(file).mode & 0o777;
    p.entry({ name: relative(root, file).split('\\').join('/'), mode, mtime: new Date(0) }, readFileSync(file));
  }
  p.finalize();
  await ended;
  const archive = gzipSync(Buffer.concat(chunks));
  return { archive, sha256: createHash('sha256').update(archive).digest('hex'), size_bytes: archive.length, files: files.length };
}

/** The archive as a stream of chunks, reporting bytes as fetch takes them. */
function progressStream(data: Buffer, onProgress?: (sent: number, total: number) => void): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (offset >= data.length) return controller.close();
      const end = Math.min(offset + CHUNK, data.length);
      controller.enqueue(new Uint8Array(data.subarray(offset, end)));
      offset = end;
      onProgress?.(offset, data.length);
    },
  });
}

export interface DeployOptions {
  /** Agent name; the manifest's `name`, else the folder name. */
  name?: string;
  /** Publish to this agent instead of looking one up by name. */
  agentId?: string;
  /** Always create a new agent, even when one has the name. */
  createNew?: boolean;
  /** Make a published version active (default true). */
  activate?: boolean;
  onStage?: (stage: 'pack' | 'reserve' | 'upload' | 'finalize' | 'publish', detail?: string) => void;
  onProgress?: (sent: number, total: number) => void;
}

export interface DeployResult {
  agent: Agent;
  /** Set when a new version was published to an existing agent. */
  version: AgentVersion | null;
  created: boolean;
  snapshot: Snapshot;
  packed: Omit<PackedFolder, 'archive'>;
}

/** The snapshot did not become ready; `reason` is the server's explanation in plain words. */
export class DeployError extends Error {
  override name = 'DeployError';
  constructor(
    message: string,
    readonly snapshotId: string | null,
  ) {
    super(message);
  }
}

/**
 * Deploys a folder holding troupe.json through the public API: pack, reserve
 * a source snapshot (SHA-256 and size), upload to the upload_url, finalize,
 * then create the agent or publish a new version of the existing one.
 */
export async function deployFolder(client: TroupeClient, dir: string, opts: DeployOptions = {}): Promise<DeployResult> {
  // Sent as read: the server judges the manifest and names any field that is wrong.
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(join(dir, 'troupe.json'), 'utf8')) as Manifest;
  } catch (err) {
    throw new DeployError(`${join(dir, 'troupe.json')} could not be read as JSON: ${(err as Error).message}`, null);
  }
  opts.onStage?.('pack');
  const { archive, ...packed } = await packFolder(dir);
  opts.onStage?.('reserve', `${packed.files} files, ${packed.size_bytes} bytes, sha256 ${packed.sha256.slice(0, 12)}…`);
  const reservation = await client.sourceSnapshots.reserve({ format: 'tar.gz', sha256: packed.sha256, size_bytes: packed.size_bytes, metadata: { source: 'troupe deploy' } });
  opts.onStage?.('upload');
  await client.sourceSnapshots.upload(reservation, progressStream(archive, opts.onProgress));
  opts.onStage?.('finalize');
  const snapshot = await client.sourceSnapshots.finalize(reservation.source_snapshot_id);
  if (snapshot.status !== 'ready') {
    throw new DeployError(`The upload did not arrive intact, so nothing was deployed. ${snapshot.failure_reason ?? 'The snapshot is ' + snapshot.status + '.'} Run the deploy again.`, snapshot.source_snapshot_id);
  }
  const name = opts.name ?? (typeof manifest.name === 'string' && manifest.name ? manifest.name : basename(resolve(dir)));
  const source = { type: 'upload' as const, source_snapshot_id: snapshot.source_snapshot_id };
  const existing = opts.agentId ? await client.agents.get(opts.agentId) : opts.createNew ? undefined : (await client.agents.all()).find((a) => a.name === name);
  if (!existing) {
    opts.onStage?.('publish', `creating agent ${name}`);
    return { agent: await client.agents.create({ name, manifest, source }), version: null, created: true, snapshot, packed };
  }
  opts.onStage?.('publish', `publishing a new version of ${existing.id}`);
  const version = await client.agents.publishVersion(existing.id, { manifest, source, activate: opts.activate ?? true });
  return { agent: await client.agents.get(existing.id), version, created: false, snapshot, packed };
}
