import { batchStatus, childState, terminalWebhookType, type ChildState } from '../../src/domain/batch-status.js';
import type { BatchDoc, BatchStore } from '../../src/store/batches.js';
import type { Send } from '../runtime/actor.js';
import { webhookSend, type WebhookJob } from '../webhook/messages.js';

/** Where the terminal webhook goes, handed off at once: it must be enqueued before it is marked so. */
export interface Outbox {
  send(sends: Send[]): Promise<void>;
}

type Header = Pick<BatchDoc, '_id' | 'org_id' | 'agent_id' | 'state' | 'chunk_count' | 'terminal_fired' | 'terminal_type' | 'terminal_enqueued'>;

/**
 * Enqueues the batch's terminal webhook. The right to decide is taken by a
 * unique insert (atomic on FerretDB v1 and MongoDB alike), so one caller
 * decides the type. A caller that finds it taken but not yet enqueued (the
 * claimer may have died) enqueues too: the deterministic job id keeps that
 * from making a second job.
 */
export async function fireTerminal(store: BatchStore, outbox: Outbox, header: Header, type: string): Promise<boolean> {
  const claimed = await store.claimTerminal(header._id, type);
  let decided = type;
  if (!claimed) {
    const doc = await store.header(header._id);
    if (!doc || doc.terminal_enqueued) return false;
    decided = doc.terminal_type ?? type;
  }
  const job: WebhookJob = { kind: 'batch.lifecycle', org_id: header.org_id, agent_id: header.agent_id, batch_id: header._id, type: decided as Extract<WebhookJob, { kind: 'batch.lifecycle' }>['type'] };
  await outbox.send([webhookSend(job)]);
  await store.markEnqueued(header._id);
  return claimed;
}

/**
 * Fires the terminal webhook when every child has settled. The counters only
 * trigger this check; the check itself reads every child's settlement by
 * `_id`, so a counter that ran ahead after a crash cannot fire early, and the
 * type comes from what each child actually did.
 */
export async function finishIfSettled(store: BatchStore, outbox: Outbox, header: Header): Promise<boolean> {
  if (header.terminal_enqueued) return false;
  if (header.terminal_fired && header.terminal_type) return fireTerminal(store, outbox, header, header.terminal_type);
  // Until the items are stored there is nothing to check against.
  if (header.state !== 'ready') return false;
  const items = await store.items(header);
  if (!items.length) return false;
  const sessionIds = items.flatMap((i) => (i.session_id ? [i.session_id] : []));
  const settlements = new Map((await store.settlementsOf(sessionIds)).flatMap((s) => (s ? [[s._id, s.status] as const] : [])));
  const states: ChildState[] = [];
  for (const item of items) {
    if (!item.session_id) states.push('rejected');
    else if (settlements.has(item.session_id)) states.push(childState(settlements.get(item.session_id)!));
    else return false;
  }
  const type = terminalWebhookType(batchStatus(states));
  return type ? fireTerminal(store, outbox, header, type) : false;
}
