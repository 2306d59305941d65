import type { ToolRunJob } from '../../src/domain/actors/tool-runner.js';
import type { MessageState, MessageStatus } from '../../src/domain/ledger.js';
import type { Core } from '../../src/roles/core.js';
import { ProjectionWriter } from '../../src/store/projection-writer.js';
import { sessionState } from '../../src/store/sessions.js';

/**
 * A tool-run job for a call its message waits on, as a turn leaves it: the
 * message is saved through the projection writer before the job is used, the
 * way a turn writes its messages before it hands off (the tool-runner runs
 * only calls that still wait). The session's state is written back as stored. `status` other than `requires_action` sets up a call
 * that no longer waits.
 */
export async function waitingToolJob(core: Core, job: ToolRunJob, status: MessageStatus = 'requires_action'): Promise<ToolRunJob> {
  const message: MessageState = {
    id: job.message_id,
    session_id: job.session_id,
    sequence_number: 3,
    parts: [{ type: 'text', text: 'use the tool' }],
    metadata: {},
    status,
    attempt: job.attempt,
    model_calls: 1,
    pending_tool_calls: [{ id: job.tool_call_id, name: job.tool_name }],
    output: { parts: [] },
    error: null,
    created_at: new Date().toISOString(),
    completed_at: null,
  };
  const session = await core.stores.sessions.col.findOne({ _id: job.session_id });
  if (!session) throw new Error(`waitingToolJob: session ${job.session_id} is not stored`);
  await new ProjectionWriter(core.stores.sessions, core.stores.messages).save(job.org_id, sessionState(session), [message]);
  return job;
}
