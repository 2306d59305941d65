import type { ToolRunJob } from '../../actors/tool-runner/messages.js';
import type { MessageState, MessageStatus } from '../../src/domain/ledger.js';
import type { Core } from '../../src/roles/core.js';

/**
 * A tool-run job for a call its message waits on, as a turn leaves it: the
 * message is saved in the store before the job is used, the way a turn
 * writes its messages before it hands off (the tool-runner runs only calls
 * that still wait). `status` other than `requires_action` sets up a call
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
  await core.stores.messages.save(job.org_id, [message]);
  return job;
}
