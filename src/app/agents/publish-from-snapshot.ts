import { validateManifest } from './manifest.js';
import { evaluateEntrypoint } from './entrypoint.js';
import { buildVersionContent, SnapshotArchive } from './publish.js';
import { ConflictError, NotFoundError } from '../../domain/errors.js';
import { checkModelEndpoint, type ModelEndpointGuard } from '../../lib/net/model-endpoint.js';
import { listMcpTools, type McpPublishPorts } from './mcp-tools.js';
import type { VersionContent } from '../../store/agents.js';
import type { Stores } from '../../store/stores.js';

export interface PublishInput {
  manifest: unknown;
  source: { type: 'upload'; source_snapshot_id: string };
}

/** Where a publish runs the entrypoint, and which model endpoints a manifest may name. */
export interface PublishPlace {
  sandboxDir: string;
  models: ModelEndpointGuard;
  /** Lists the manifest's MCP servers' tools (docs/mcp.md); absent where no MCP server may be reached. */
  mcp?: McpPublishPorts;
}

/**
 * Validates the manifest, attaches the snapshot (so it cannot be deleted while
 * it is read or once a version references it), inspects the archive and hands
 * the computed content to `write`. Any failure, or `write` returning null,
 * releases the snapshot again.
 */
export async function publishFromSnapshot<T>(
  stores: Pick<Stores, 'snapshots' | 'blobs'>,
  place: PublishPlace,
  orgId: string,
  input: PublishInput,
  write: (snapshotId: string, content: VersionContent) => Promise<T | null>,
): Promise<T | null> {
  const manifest = validateManifest(input.manifest);
  for (const [i, o] of manifest.llm_options.entries()) {
    if (o.base_url) await checkModelEndpoint(o.base_url, `manifest.llm_options[${i}].base_url`, place.models);
  }
  // Before the snapshot is attached: a server that refuses or fails is the publish's 4xx, with nothing to release.
  const mcpTools = await listMcpTools(place.mcp, orgId, manifest);
  const sandboxDir = place.sandboxDir;
  const snapshotId = input.source.source_snapshot_id;
  if (!(await stores.snapshots.attach(orgId, snapshotId))) {
    const doc = await stores.snapshots.get(orgId, snapshotId);
    if (!doc) throw new NotFoundError('source_snapshot', snapshotId);
    const hint = doc.status === 'pending_upload' ? 'upload and finalize it first' : `its failure_reason: ${doc.failure_reason}`;
    throw new ConflictError(`Source snapshot ${snapshotId} is ${doc.status}, not ready (${hint}).`, 'snapshot_not_ready', 'source.source_snapshot_id');
  }
  let written: T | null = null;
  try {
    const built = await buildVersionContent(manifest, new SnapshotArchive(() => stores.blobs.download('snapshots', snapshotId)), mcpTools);
    const content = { ...built, agent_config: await evaluateEntrypoint({ blobs: stores.blobs, sandboxDir }, manifest, snapshotId) };
    written = await write(snapshotId, content);
    return written;
  } finally {
    if (written === null) await stores.snapshots.detach(orgId, snapshotId);
  }
}
