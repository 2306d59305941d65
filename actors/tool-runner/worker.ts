import type { Job } from 'bullmq';
import { once } from '../../src/lifecycle/shutdown.js';
import type { Core } from '../../src/roles/core.js';
import { hostSandbox } from '../../src/sandbox/capabilities.js';
import { runInSandbox } from '../../src/sandbox/run.js';
import { sandboxSecrets } from '../../src/sandbox/secrets.js';
import { SANDBOX_UID } from '../../src/sandbox/types.js';
import { VersionFiles } from '../../src/sandbox/version-files.js';
import { StorageArea } from '../../src/storage/area.js';
import { BlobStore } from '../../src/store/blobs.js';
import { dataPlane, type DataPlane } from '../runtime/data-plane.js';
import type { ToolRunResult } from '../session/messages.js';
import { TOOL_RUNNER_QUEUE, toolAnswerCommandId, type ToolRunJob } from './messages.js';
import { runToolJob, type ToolRunnerDeps } from './run-tool-job.js';

/** The real dependencies of runToolJob, over the core's stores. */
export function toolRunnerDeps(core: Core, signal?: AbortSignal): ToolRunnerDeps {
  const agents = core.stores.agents;
  const blobs = new BlobStore(core.db);
  const dropUser = hostSandbox().user === 'dropped';
  const files = new VersionFiles(core.config.sandboxDir, (id) => blobs.download('snapshots', id), dropUser);
  const area = new StorageArea(core.stores.storageBindings, blobs, dropUser ? { uid: SANDBOX_UID } : {});
  return {
    session: (id) => core.stores.sessions.byId(id),
    version: (org, id) => agents.getVersion(org, id),
    secrets: (session, declared) => sandboxSecrets({ box: core.box, reveal: (org, name) => core.stores.credentials.reveal(org, name) }, session, declared),
    versionDir: (v) => files.dirFor(v),
    scratch: () => files.scratch(),
    sandbox: runInSandbox,
    storage: async (session) => {
      const dir = await files.scratch();
      try {
        const before = await area.checkout(session.org_id, session.storage_binding_id!, dir.path);
        return { dir: dir.path, commit: () => area.commit(session.org_id, session.storage_binding_id!, dir.path, before), remove: dir.remove };
      } catch (err) {
        await dir.remove();
        throw err;
      }
    },
    memoryMb: core.config.sandboxMemoryMb,
    signal,
  };
}

/** Reports to the session actor; the command id makes a redelivered job one command. */
async function report(plane: DataPlane, core: Core, job: ToolRunJob, result: ToolRunResult): Promise<void> {
  const session = await core.stores.sessions.byId(job.session_id);
  await plane.mailbox.send(
    {
      session_id: job.session_id,
      command: { kind: 'tool.completed', command_id: toolAnswerCommandId(job), message_id: job.message_id, attempt: job.attempt, tool_call_id: job.tool_call_id, result },
    },
    session?.priority ?? 'interactive',
  );
}

/**
 * The tool-runner actor: runs custom tool calls in the sandbox, a few at a
 * time per process (each is a child process), and sends each outcome back as
 * a `tool.completed` command. When a job exhausts its retries on an
 * infrastructure failure, the model still gets an error result instead of a
 * turn that waits forever.
 */
export async function startToolRunner(core: Core, lockDurationMs: number): Promise<void> {
  const plane = dataPlane(core);
  const stopping = new AbortController();
  const deps = toolRunnerDeps(core, stopping.signal);
  const worker = plane.queues.worker<ToolRunJob, void>(
    TOOL_RUNNER_QUEUE,
    async (job: Job<ToolRunJob>) => report(plane, core, job.data, await runToolJob(deps, job.data)),
    { concurrency: core.config.toolRunnerConcurrency, lockDuration: lockDurationMs },
  );
  worker.on('failed', (job, err) => {
    if (!job || stopping.signal.aborted || job.attemptsMade < (job.opts.attempts ?? 1)) return;
    core.log.error({ err: err.message, job_id: job.id, session_id: job.data.session_id }, 'tool run failed for good');
    report(plane, core, job.data, { ok: false, error: 'The tool could not be run (internal error).' }).catch((e: Error) => core.log.error({ err: e.message }, 'tool-runner could not report a failure'));
  });
  worker.on('error', (err) => core.log.error({ err: err.message }, 'tool-runner worker error'));
  // A tool may run for up to an hour: kill running calls rather than hold shutdown; their jobs are retried.
  core.shutdown.add(
    once('tool-runner', async () => {
      stopping.abort();
      await worker.close();
    }),
  );
}
