import type { Job } from 'bullmq';
import { once } from '../../src/lifecycle/shutdown.js';
import type { Core } from '../../src/roles/core.js';
import { AgentStore } from '../../src/store/agents.js';
import { dataPlane } from '../runtime/data-plane.js';
import { ROUTER_PROXY_QUEUE } from '../runtime/queues.js';
import type { ModelCall } from '../session/messages.js';
import { callModel } from './handler.js';

/**
 * The router-proxy actor: runs model calls off the session's turn and sends
 * the outcome back as a `model.responded` command. Many calls run at once;
 * the session actor stays free meanwhile.
 */
export async function startRouterProxy(core: Core, concurrency: number, lockDurationMs: number): Promise<void> {
  const plane = dataPlane(core);
  const agents = new AgentStore(core.db);
  const deps = { session: (id: string) => core.stores.sessions.byId(id), version: (org: string, id: string) => agents.getVersion(org, id) };
  const worker = plane.queues.worker<ModelCall, void>(
    ROUTER_PROXY_QUEUE,
    async (job: Job<ModelCall>) => {
      const call = job.data;
      const result = await callModel(deps, call);
      await plane.mailbox.send({
        session_id: call.session_id,
        command: { kind: 'model.responded', command_id: `resp-${call.message_id}-${call.attempt}-${call.call_index}`, message_id: call.message_id, attempt: call.attempt, call_index: call.call_index, result },
      });
    },
    { concurrency, lockDuration: lockDurationMs },
  );
  worker.on('error', (err) => core.log.error({ err: err.message }, 'router-proxy worker error'));
  core.shutdown.add(once('router-proxy', () => worker.close()));
}
