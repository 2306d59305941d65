import type { Job } from 'bullmq';
import { once } from '../../src/lifecycle/shutdown.js';
import type { Core } from '../../src/roles/core.js';
import { dataPlane } from '../runtime/data-plane.js';
import { ROUTER_PROXY_QUEUE } from '../runtime/queues.js';
import { modelAnswerCommandId, type ModelCall } from '../session/messages.js';
import { LlmClient } from '../../src/llm/client.js';
import { Stickiness } from '../../src/router/conversation.js';
import { RoutingLookup } from '../../src/router/lookup.js';
import { UsageBuffer } from '../../src/router/usage-buffer.js';
import { messageState } from '../../src/store/messages.js';
import type { FileSource } from '../../src/llm/file-parts.js';
import { VersionCache } from '../session/agent-context.js';
import { callModel, type ModelCallDeps } from './handler.js';

const HISTORY_LIMIT = 100;

function fileSource(stores: Core['stores']): FileSource {
  return {
    get: async (org, id) => {
      const f = await stores.files.get(org, id);
      return f && { id: f._id, filename: f.filename, content_type: f.content_type, size_bytes: f.size_bytes };
    },
    bytes: async (id) => {
      const chunks: Buffer[] = [];
      for await (const c of stores.blobs.download('files', id)) chunks.push(c as Buffer);
      return Buffer.concat(chunks);
    },
  };
}

/**
 * The router-proxy actor: runs model calls off the session's turn and sends
 * the outcome back as a `model.responded` command. Many calls run at once;
 * the session actor stays free meanwhile.
 */
export async function startRouterProxy(core: Core, concurrency: number, lockDurationMs: number): Promise<void> {
  const plane = dataPlane(core);
  const agents = core.stores.agents;
  const versions = new VersionCache((org, id) => agents.getVersion(org, id));
  const client = new LlmClient({ allowPrivate: core.config.modelsAllowPrivate });
  core.shutdown.add(once('llm-client', () => client.close()));
  const usage = new UsageBuffer(core.stores.usage, core.log);
  core.shutdown.add(once('routing-usage', () => usage.close()));
  const routing = { lookup: new RoutingLookup(core.stores), stickiness: new Stickiness(core.redis, core.keys), usage, client };
  const deps: ModelCallDeps = {
    session: (id) => core.stores.sessions.byId(id),
    version: (org, id) => versions.get(org, id),
    message: async (org, sid, id) => {
      const m = await core.stores.messages.get(org, sid, id);
      return m ? messageState(m) : null;
    },
    history: async (s) => (await core.stores.messages.list(s.org_id, s._id, HISTORY_LIMIT, 0)).map(messageState),
    client,
    routing,
    log: core.log,
    box: core.box,
    revealCredential: (org, name) => core.stores.credentials.reveal(org, name),
    files: fileSource(core.stores),
    usage,
    publishDelta: (sid, delta) => void core.redis.publish(core.keys.sessionDeltas(sid), JSON.stringify(delta)).catch(() => undefined),
  };
  const worker = plane.queues.worker<ModelCall, void>(
    ROUTER_PROXY_QUEUE,
    async (job: Job<ModelCall>) => {
      const call = job.data;
      const result = await callModel(deps, call);
      await plane.mailbox.send({
        session_id: call.session_id,
        command: { kind: 'model.responded', command_id: modelAnswerCommandId(call), message_id: call.message_id, attempt: call.attempt, call_index: call.call_index, result },
      });
    },
    { concurrency, lockDuration: lockDurationMs },
  );
  worker.on('error', (err) => core.log.error({ err: err.message }, 'router-proxy worker error'));
  core.shutdown.add(once('router-proxy', () => worker.close()));
}
