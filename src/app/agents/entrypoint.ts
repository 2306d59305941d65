import { ErrorType, InvalidRequestError, TroupeError } from '../../domain/errors.js';
import { ArchiveError } from '../../lib/archive/archive-scan.js';
import { hostSandbox } from '../../lib/sandbox/capabilities.js';
import { runInSandbox } from '../../lib/sandbox/run.js';
import { VersionFiles } from '../../lib/sandbox/version-files.js';
import { check, type JsonSchema } from '../../lib/schemas/validator.js';
import type { AgentConfig, Manifest } from '../../domain/agent.js';
import type { BlobStore } from '../../store/blobs.js';

const ENTRYPOINT_TIMEOUT_MS = 5000;
const ENTRYPOINT_MEMORY_MB = 128;

const agentConfigSchema: JsonSchema = {
  type: 'object',
  properties: {
    instructions: { type: 'string', maxLength: 200_000 },
    llm: { type: 'string', maxLength: 64 },
    tools: { type: 'array', maxItems: 200, items: { type: 'string', maxLength: 128 } },
    max_turns: { type: 'integer', minimum: 1, maximum: 100 },
  },
};

/** File-system answers that only the archive's own layout can cause (a file where a directory must go, ...). */
const LAYOUT_ERRORS = new Set(['EEXIST', 'ENOTDIR', 'EISDIR', 'ENAMETOOLONG', 'EINVAL', 'ELOOP', 'ENOENT']);

/**
 * Extraction failures as the publishing client sees them: the archive's fault
 * is a 400 naming it, the host's (disk full, permissions) a 503 to retry.
 * Never a 500: the archive is client input.
 */
function extractionRefused(e: unknown): never {
  if (e instanceof TroupeError) throw e;
  if (e instanceof ArchiveError) throw new InvalidRequestError(e.message, 'source.source_snapshot_id', e.code);
  const code = (e as NodeJS.ErrnoException).code;
  if (code && LAYOUT_ERRORS.has(code)) {
    throw new InvalidRequestError(`The archive could not be unpacked (${code}); check for entries that conflict with each other.`, 'source.source_snapshot_id', 'archive_unextractable');
  }
  throw new TroupeError(503, ErrorType.unavailable, 'extraction_failed', 'The archive could not be unpacked on this host; retry.');
}

/** What the sandbox's runner puts in place of an export's `run` function, which JSON would drop (runner.ts, runner.py). */
const RUN_MARK = '[run function]';

/** A code agent's `sdk` names the runtime its run function needs: a Python module's is troupe-py@1, any other's troupe-js@1. */
function checkCodeSdk(manifest: Manifest, file: string): void {
  const want = file.endsWith('.py') ? 'troupe-py@1' : 'troupe-js@1';
  if (manifest.sdk !== want) throw new InvalidRequestError(`The entrypoint ${manifest.entrypoint} has a run function, so sdk must be ${want} (it is ${manifest.sdk}).`, 'manifest.sdk', 'invalid_entrypoint');
}

export interface EntrypointDeps {
  blobs: BlobStore;
  sandboxDir: string;
}

/**
 * Reads the entrypoint's export (`{instructions, llm?, tools?, max_turns?}`)
 * once, at publish, by loading the module inside the sandbox: agent code never
 * runs in a Troupe process. The result is stored with the immutable version.
 */
export async function evaluateEntrypoint(deps: EntrypointDeps, manifest: Manifest, snapshotId: string): Promise<AgentConfig> {
  const [file, variable] = [manifest.entrypoint.slice(0, manifest.entrypoint.lastIndexOf(':')), manifest.entrypoint.slice(manifest.entrypoint.lastIndexOf(':') + 1)];
  const files = new VersionFiles(deps.sandboxDir, (id) => deps.blobs.download('snapshots', id), hostSandbox().user !== 'inherited');
  const dir = await files.dirFor({ _id: snapshotId, snapshot_id: snapshotId }).catch(extractionRefused);
  const scratch = await files.scratch();
  try {
    const result = await runInSandbox({ rootDir: dir, handlerPath: VersionFiles.fileIn(dir, file), args: null, env: {}, timeoutMs: ENTRYPOINT_TIMEOUT_MS, memoryMb: ENTRYPOINT_MEMORY_MB, internetAccess: false, scratchDir: scratch.path, exportName: variable });
    if (!result.ok) throw new InvalidRequestError(`The entrypoint ${manifest.entrypoint} could not be loaded: ${result.error}`, 'manifest.entrypoint', 'invalid_entrypoint');
    const config = check<AgentConfig>(agentConfigSchema, result.output ?? {}, 'entrypoint');
    const toolNames = new Set(manifest.custom_tools.map((t) => t.name));
    const unknown = (config.tools ?? []).find((t) => !toolNames.has(t));
    if (unknown) throw new InvalidRequestError(`The entrypoint lists tool ${unknown}, which the manifest does not declare.`, 'entrypoint.tools', 'invalid_entrypoint');
    if (config.llm && !manifest.llm_options.some((o) => o.id === config.llm)) {
      throw new InvalidRequestError(`The entrypoint names llm ${config.llm}, which is not an llm option.`, 'entrypoint.llm', 'invalid_entrypoint');
    }
    const code = (result.output as { run?: unknown } | null)?.run === RUN_MARK;
    if (code) checkCodeSdk(manifest, file);
    return { instructions: config.instructions, llm: config.llm, tools: config.tools, max_turns: config.max_turns, ...(code ? { code: true } : {}) };
  } finally {
    await scratch.remove();
  }
}
