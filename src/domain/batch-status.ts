/**
 * The batch status rule of DESIGN.md §6, as pure functions over the children's
 * states, so the GET endpoint and the batch actor derive it the same way and
 * unit tests pin it down.
 */
export type BatchStatus = 'queued' | 'running' | 'completed' | 'failed' | 'partial_failed';

/**
 * Where one item stands. `rejected` is an item whose session could not be
 * created: it counts as failed, but it never started.
 */
export type ChildState = 'queued' | 'running' | 'completed' | 'failed' | 'rejected';

export interface BatchCounts {
  queued: number;
  running: number;
  completed: number;
  failed: number;
}

/**
 * A child's state from its session's last message status. A cancelled message
 * counts as failed (the work was not done); `requires_action` and any other
 * non-terminal status count as running.
 */
export function childState(lastMessageStatus: string | null): Exclude<ChildState, 'rejected'> {
  switch (lastMessageStatus) {
    case null:
    case 'queued':
      return 'queued';
    case 'completed':
      return 'completed';
    case 'failed':
    case 'cancelled':
      return 'failed';
    default:
      return 'running';
  }
}

/** How a child's first message ended, as the batch actor recorded it (`batch_settlements`). */
export type Settled = 'completed' | 'failed' | 'cancelled';

/**
 * The last message status of a child whose session is gone (deleted): how
 * its message ended if the batch actor recorded it, else `cancelled`, since
 * deleting a session stops its work as a cancel does (docs/decisions.md,
 * "A deleted child"). Either way it is terminal: a deleted session runs
 * nothing more, so the batch must not wait for it.
 */
export function deletedChildStatus(settled: Settled | null): Settled {
  return settled ?? 'cancelled';
}

/**
 * One item's state from what is known of its child: its session when it is
 * there (the source of truth, as the spec has it), else how it was recorded
 * as settled. `GET /v1/session-batches/{id}`, its counts in the batch webhook
 * and the batch actor's terminal decision all read children through this.
 */
export function itemState(child: { created: boolean; session: { last_message_status: string | null } | null; settled: Settled | null }): ChildState {
  if (!child.created) return 'rejected';
  if (child.session) return childState(child.session.last_message_status);
  return childState(deletedChildStatus(child.settled));
}

export function countChildren(states: readonly ChildState[]): BatchCounts {
  const counts: BatchCounts = { queued: 0, running: 0, completed: 0, failed: 0 };
  for (const s of states) counts[s === 'rejected' ? 'failed' : s] += 1;
  return counts;
}

/**
 * queued while no child has started; running while any child is queued or
 * running; once every child is terminal: completed if all completed, failed
 * if all failed, partial_failed otherwise.
 */
export function batchStatus(states: readonly ChildState[]): BatchStatus {
  const c = countChildren(states);
  if (c.queued + c.running === 0) {
    if (c.failed === 0) return 'completed';
    return c.completed === 0 ? 'failed' : 'partial_failed';
  }
  const started = states.some((s) => s === 'running' || s === 'completed' || s === 'failed');
  return started ? 'running' : 'queued';
}

/** A batch's status and counts, derived together from its items' states. */
export interface BatchProgress {
  status: BatchStatus;
  counts: BatchCounts;
}

export function batchProgress(states: readonly ChildState[]): BatchProgress {
  return { status: batchStatus(states), counts: countChildren(states) };
}

export type TerminalWebhookType = 'batch.completed' | 'batch.failed' | 'batch.partial_failed';

/** The webhook type for a terminal status; null while the batch is not terminal. */
export function terminalWebhookType(status: BatchStatus): TerminalWebhookType | null {
  if (status === 'completed') return 'batch.completed';
  if (status === 'failed') return 'batch.failed';
  if (status === 'partial_failed') return 'batch.partial_failed';
  return null;
}
