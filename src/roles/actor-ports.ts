import { join } from 'node:path';
import type { BatchPorts } from '../../actors/batch/actor.js';
import { publish } from '../lib/redis/publish.js';
import type { RouterProxyPorts } from '../../actors/router-proxy/actor.js';
import type { SessionPorts } from '../../actors/session/turn.js';
import { SessionCache } from '../../actors/session/session-cache.js';
import type { ToolRunnerPorts } from '../../actors/tool-runner/actor.js';
import { mcpCaller } from '../../actors/tool-runner/mcp-call.js';
import { McpConnector } from '../lib/mcp/connector.js';
import type { WebhookPorts } from '../../actors/webhook/actor.js';
import { webhookMetrics } from '../../actors/webhook/metrics.js';
import { WebhookSender } from '../../actors/webhook/send.js';
import { once } from '../lib/lifecycle/shutdown.js';
import { LlmClient } from '../lib/llm/client.js';
import type { FileSource } from '../lib/llm/file-parts.js';
import type { Resolver } from '../lib/net/resolver.js';
import { CandidateHealth } from '../lib/routing/health.js';
import { Stickiness } from '../lib/routing/conversation.js';
import { RoutingLookup } from '../lib/routing/lookup.js';
import { UsageBuffer } from '../lib/routing/usage-buffer.js';
import { hostSandbox } from '../lib/sandbox/capabilities.js';
import { OwnAddresses } from '../lib/net/egress-guard.js';
import { ownEndpoints, type EgressSettings } from '../lib/sandbox/egress.js';
import { runInSandbox, SANDBOX_FILES } from '../lib/sandbox/run.js';
import { sandboxSecrets } from '../lib/sandbox/secrets.js';
import { SANDBOX_UID } from '../lib/sandbox/types.js';
import { VersionFiles } from '../lib/sandbox/version-files.js';
import { StorageArea } from '../app/storage-area.js';
import { purgeSession } from '../app/sessions/delete-session.js';
import { CancelRegistry, type CancelTracker } from '../lib/pubsub/cancels.js';
import { terminalCounts } from '../store/batch-view.js';
import { BlobStore } from '../store/blobs.js';
import { LedgerWriter } from '../store/ledger-writer.js';
import { ProjectionWriter } from '../store/projection-writer.js';
import { messageState } from '../domain/views/message.js';
import { MAX_SLEEP_MS } from '../domain/session/code-agent.js';
import type { EventEnvelope } from '../domain/ledger.js';
import { envelope } from '../store/ledger.js';
import { VersionCache } from '../store/version-cache.js';
import { countedLedger } from '../../actors/runtime/prometheus-observer.js';
import { modelCallMetrics } from '../lib/metrics/model-metrics.js';
import type { Core } from './core.js';

/**
 * Each actor's ports, wired from this process's connections and stores: the
 * composition root is the only place that knows both sides.
 */

const HISTORY_LIMIT = 100;
/** Outlives a message's longest sleep by a day; a flag lost anyway only costs one more step run that asks again. */
const TRANSCRIPT_FLAG_SECONDS = MAX_SLEEP_MS / 1000 + 24 * 60 * 60;

export function sessionPorts(core: Core, versions: VersionCache, cache = new SessionCache()): SessionPorts {
  const { keys, stores } = core;
  // Many turns' appends and projection writes share round trips (group commit).
  const ledger = new LedgerWriter(stores.ledger);
  return {
    sessions: stores.sessions,
    ledger: countedLedger({ append: (docs) => ledger.append(docs), after: (id, seq, limit) => stores.ledger.after(id, seq, limit), get: (id, seq) => stores.ledger.get(id, seq) }, core.metrics),
    messages: stores.messages,
    projections: new ProjectionWriter(stores.sessions, stores.messages),
    versions,
    eventsChannel: (id) => keys.sessionEvents(id),
    cancelsChannel: keys.messageCancels(),
    purge: (org, id) => purgeSession(stores, org, id),
    publicUrl: core.config.publicUrl,
    cache,
  };
}

/** Files a model call may attach, read from the org's file store. */
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

export function routerProxyPorts(core: Core, versions: VersionCache, cancels: CancelTracker = new CancelRegistry()): RouterProxyPorts {
  const client = new LlmClient({ allowPrivate: core.config.modelsAllowPrivate, observe: modelCallMetrics(core.metrics), maxAnswerBytes: core.config.buffers.upstreamAnswerBytes, maxEventBytes: core.config.buffers.upstreamEventBytes });
  core.shutdown.add(once('llm-client', () => client.close()));
  const usage = new UsageBuffer(core.stores.usage, core.log, undefined, core.budgets, core.metrics);
  core.shutdown.add(once('routing-usage', () => usage.close()));
  return {
    session: (id) => core.stores.sessions.byId(id),
    version: (org, id) => versions.get(org, id),
    message: async (org, sid, id) => {
      const m = await core.stores.messages.get(org, sid, id);
      return m ? messageState(m) : null;
    },
    history: async (s) => (await core.stores.messages.list(s.org_id, s._id, HISTORY_LIMIT, 0)).map(messageState),
    client,
    routing: { lookup: new RoutingLookup(core.stores), stickiness: new Stickiness(core.redis, core.keys), usage, client, metrics: core.metrics, limiter: core.limits.requests, health: new CandidateHealth(core.redis, core.keys, core.config.routerBreaker, { metrics: core.metrics }), attemptTimeoutMs: core.config.routerAttemptTimeoutMs },
    log: core.log,
    box: core.box,
    revealCredential: (org, name) => core.stores.credentials.reveal(org, name),
    files: fileSource(core.stores),
    usage,
    budgets: core.budgets,
    publishDelta: (sid, delta) => void publish(core.redis, core.keys.sessionDeltas(sid), JSON.stringify(delta)).catch(() => undefined),
    cancels,
  };
}

export function toolRunnerPorts(core: Core, versions?: VersionCache, cancels: CancelTracker = new CancelRegistry()): ToolRunnerPorts {
  const agents = core.stores.agents;
  const blobs = new BlobStore(core.db);
  const dropUser = hostSandbox().user !== 'inherited';
  const files = new VersionFiles(core.config.sandboxDir, (id) => blobs.download('snapshots', id), dropUser, core.config.sandboxVersionsMaxBytes);
  const area = new StorageArea(core.stores.storageBindings, blobs, dropUser ? { uid: SANDBOX_UID } : {});
  const egress = egressSettings(core);
  const mcp = new McpConnector({ allowPrivate: core.config.modelsAllowPrivate, maxResultBytes: core.config.buffers.mcpResultBytes, pool: core.config.buffers.mcpPool });
  core.shutdown.add(once('mcp-connector', () => mcp.close()));
  return {
    session: (id) => core.stores.sessions.byId(id),
    message: async (org, sessionId, id) => {
      const doc = await core.stores.messages.get(org, sessionId, id);
      return doc && messageState(doc);
    },
    version: (org, id) => (versions ? versions.get(org, id) : agents.getVersion(org, id)),
    secrets: (session, declared) => sandboxSecrets({ box: core.box, reveal: (org, name) => core.stores.credentials.reveal(org, name) }, session, declared),
    versionDir: (v) => files.lease(v),
    scratch: () => files.scratch(),
    sandbox: (req) => runInSandbox(req, SANDBOX_FILES, { egress }),
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
    mcp: mcpCaller(mcp, (org, name) => core.stores.credentials.reveal(org, name)),
    events: async (sessionId, afterSequence) => journalEvents(core, sessionId, afterSequence),
    history: async (org, sessionId) => (await core.stores.messages.list(org, sessionId, HISTORY_LIMIT, 0)).map(messageState),
    transcriptWanted: async (messageId) => (await core.redis.exists(core.keys.agentTranscript(messageId))) === 1,
    wantTranscript: async (messageId) => void (await core.redis.set(core.keys.agentTranscript(messageId), '1', 'EX', TRANSCRIPT_FLAG_SECONDS)),
    stepTimeoutMs: core.config.agentStepTimeoutMs,
    cancels,
  };
}

/** A code agent's message's ledger, from its user message on (its journal is read from it: src/domain/session/journal.ts). */
async function journalEvents(core: Core, sessionId: string, afterSequence: number): Promise<EventEnvelope[]> {
  const out: EventEnvelope[] = [];
  for (let from = afterSequence; ; ) {
    const docs = await core.stores.ledger.after(sessionId, from, 500);
    out.push(...docs.map(envelope));
    if (docs.length < 500) return out;
    from = docs[docs.length - 1].sequence_number;
  }
}

/** How this worker's tool calls with internet access get out: the proxy's rules from the configuration, refusals counted. */
function egressSettings(core: Core): EgressSettings {
  const c = core.config;
  const own = new OwnAddresses(ownEndpoints({ redisUrl: c.redisUrl, mongodbUrl: c.mongodbUrl, ports: [c.port, c.routerPort, c.metricsPort] }));
  return { dir: join(c.sandboxDir, 'egress'), allowPrivate: c.egressAllowPrivate, own, onRefusal: (reason) => core.metrics.egressRefusals.inc({ reason }) };
}

export function batchPorts(core: Core): BatchPorts {
  return { batches: core.stores.batches, sessions: core.stores.sessions, log: core.log };
}

export function webhookPorts(core: Core, opts: { resolver?: Resolver } = {}): WebhookPorts {
  const { config, stores } = core;
  const sender = new WebhookSender({ allowPrivate: config.webhooksAllowPrivate, timeoutMs: config.webhookTimeoutMs, resolver: opts.resolver });
  core.shutdown.add(once('webhook-sender', () => sender.close()));
  return {
    target: (org, agent) => stores.webhookConfigs.deliveryTarget(org, agent),
    disable: (org, agent, url) => stores.webhookConfigs.disable(org, agent, url),
    deliveries: stores.webhookDeliveries,
    sources: {
      session: (id) => stores.sessions.byId(id),
      batch: (org, id) => terminalCounts(stores.batches, stores.sessions, org, id).then((counts) => (counts ? { counts: { ...counts } } : null), () => null),
    },
    send: (req) => sender.send(req),
    schedule: config.webhookRetrySchedule,
    metrics: webhookMetrics(core.metrics.registry),
    log: core.log,
  };
}
