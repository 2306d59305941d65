import type { BatchFacts, BodyFacts } from './decide.js';
import type { LifecycleSession, WebhookJob } from '../../src/domain/actors/webhook.js';

export interface BodySources {
  session(id: string): Promise<LifecycleSession | null>;
  /** Null when the batch is not readable (yet): the body then has `counts: null`. */
  batch(orgId: string, id: string): Promise<BatchFacts | null>;
}

/** Reads what an event's body carries besides the job (`buildBody` in decide.ts builds it): the session, or the batch's counts. */
export async function readBodyFacts(src: BodySources, job: WebhookJob): Promise<BodyFacts> {
  switch (job.kind) {
    case 'tool.call_requested':
    case 'tool.confirmation_requested':
      return {};
    case 'session.lifecycle':
      return { session: job.session ?? (await src.session(job.session_id)) };
    case 'batch.lifecycle':
      return { batch: await src.batch(job.org_id, job.batch_id) };
    case 'budget.threshold_reached':
      return {};
  }
}
