import type { Readable } from 'node:stream';
import { InvalidRequestError } from '../../domain/errors.js';
import type { VersionContent } from '../../store/agents.js';
import type { Manifest, ToolDef } from '../../domain/agent.js';
import type { ArchiveIndex } from '../../lib/archive/archive-index.js';
import { ArchiveError, DEFAULT_ARCHIVE_LIMITS, scanArchive, type ArchiveLimits } from '../../lib/archive/archive-scan.js';
import { entrypointFile } from './manifest.js';
import { loadScripts } from './scripts.js';
import { compileTools, type ArchiveReader } from './tool-definitions.js';

/** Everything read into memory during one publish: tool definitions, schemas and scripts together. */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
const SOURCE_PARAM = 'source.source_snapshot_id';
export const MANIFEST_FILE = 'troupe.json';

function archiveRefused(e: unknown): never {
  if (e instanceof ArchiveError) throw new InvalidRequestError(e.message, SOURCE_PARAM, e.code);
  throw e;
}

/**
 * One snapshot's archive during a publish. The first pass checks every entry
 * and builds the index; files found to be needed later (schemas a definition
 * names, files reached through links) take another streamed pass. Nothing is
 * written to disk.
 */
export class SnapshotArchive implements ArchiveReader {
  private index: ArchiveIndex | null = null;
  private readonly files = new Map<string, Buffer>();
  private buffered = 0;

  constructor(
    private readonly open: () => Readable,
    private readonly limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
  ) {}

  async scan(want: Iterable<string>): Promise<void> {
    const result = await scanArchive(this.open(), new Set(want), this.limits).catch(archiveRefused);
    this.index = result.index;
    for (const [p, b] of result.files) this.keep(p, b);
  }

  isFile(path: string): boolean {
    return this.idx().realFile(path) !== null;
  }

  async read(paths: string[]): Promise<Map<string, Buffer | null>> {
    const real = new Map(paths.map((p) => [p, this.idx().realFile(p)] as const));
    const missing = new Set([...real.values()].filter((r): r is string => r !== null && !this.files.has(r)));
    if (missing.size > 0) {
      const result = await scanArchive(this.open(), missing, this.limits).catch(archiveRefused);
      for (const [p, b] of result.files) this.keep(p, b);
    }
    return new Map(paths.map((p) => [p, real.get(p) ? (this.files.get(real.get(p)!) ?? null) : null]));
  }

  private keep(path: string, bytes: Buffer): void {
    if (this.files.has(path)) return;
    this.buffered += bytes.length;
    if (this.buffered > MAX_BUFFERED_BYTES) {
      throw new InvalidRequestError(`Tool definitions, schemas and scripts together exceed ${MAX_BUFFERED_BYTES} bytes.`, SOURCE_PARAM, 'archive_file_too_large');
    }
    this.files.set(path, bytes);
  }

  private idx(): ArchiveIndex {
    if (!this.index) throw new Error('SnapshotArchive used before scan()');
    return this.index;
  }
}

/**
 * Inspects the archive against a validated manifest and computes what the
 * version stores: entrypoint present, every tool file present, external tool
 * schemas compiled, scripts parsed.
 */
export async function buildVersionContent(m: Manifest, archive: SnapshotArchive, mcpTools: readonly ToolDef[] = []): Promise<VersionContent> {
  const want = [...m.custom_tools.map((t) => (t.kind === 'external' ? t.path : t.definition)), ...m.llm_options.map((o) => o.script)];
  await archive.scan(want.filter((p): p is string => p !== undefined));
  // The body's manifest is authoritative; the archive must still carry its own copy (DESIGN §4, §5), so it is self-describing.
  if (!archive.isFile(MANIFEST_FILE)) throw new InvalidRequestError(`The archive has no ${MANIFEST_FILE} at its root.`, SOURCE_PARAM, 'archive_missing_file');
  const entry = entrypointFile(m);
  if (!archive.isFile(entry)) throw new InvalidRequestError(`The archive has no entrypoint file ${entry}.`, 'manifest.entrypoint', 'archive_missing_file');
  const tools = [...(await compileTools(m, archive)), ...mcpTools];
  const scripts = await loadScripts(m, archive, mcpTools.map((t) => t.name));
  return { manifest: m, llm_options: m.llm_options, tools, scripts, entrypoint: m.entrypoint };
}
