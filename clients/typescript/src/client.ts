import type * as Api from './generated/api.js';
import { streamSession, type StreamItem, type StreamOptions } from './stream.js';
import { newIdempotencyKey } from './retry.js';
import { readBody, Transport, type Args, type CallOptions, type ClientOptions } from './transport.js';

export type Agent = Api.GetV1AgentsAgentIdResponse;
export type AgentVersion = Api.PostV1AgentsAgentIdVersionsResponse;
export type Session = Api.GetV1SessionsSessionIdResponse;
export type Message = Api.GetV1SessionsSessionIdMessagesMessageIdResponse;
export type TurnReply = Api.PostV1SessionsSessionIdEventsResponse;
export type PendingToolCall = Api.GetV1SessionsSessionIdToolCallsResponse['tool_calls'][number];
/** What a user message does when the session is busy (docs/sessions.md). */
export type OnBusy = NonNullable<Api.PostV1SessionsSessionIdMessagesSyncBody['on_busy']>;
type BatchRead = Api.GetV1SessionBatchesBatchIdResponse;
/** A batch with its items, as `GET /v1/session-batches/{id}` answers by default. */
export type Batch = Omit<BatchRead, 'sessions'> & Required<Pick<BatchRead, 'sessions'>>;
/** A batch's status and counts without its items (`include_sessions=false`): what progress polling reads. */
export type BatchProgress = Omit<BatchRead, 'sessions'>;
export type BatchItem = Api.PostV1SessionBatchesBody['items'][number];
export type WebhookDelivery = Api.GetV1AgentsAgentIdWebhookDeliveriesDeliveryIdResponse;
export type ContentPart = Api.PostV1SessionsSessionIdMessagesSyncBody['parts'][number];
export type Snapshot = Api.GetV1SourceSnapshotsSourceSnapshotIdResponse;
export type Manifest = Api.PostV1AgentsBody['manifest'];
export type Schedule = Api.GetV1SchedulesScheduleIdResponse;
export type ScheduleRun = Api.GetV1SchedulesScheduleIdRunsResponse['runs'][number];

export const TERMINAL_MESSAGE_STATUSES = ['completed', 'failed', 'cancelled'] as const;
export const TERMINAL_BATCH_STATUSES = ['completed', 'failed', 'partial_failed'] as const;

export interface Page {
  limit?: number;
  after?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * How long `batches.wait` sleeps before its next read: a tenth of the time it
 * has waited so far, within [pollMs, maxPollMs]. A batch that ends in seconds
 * is seen within a second; a long one is read every few seconds instead of
 * every second, and is seen at most a tenth (or maxPollMs) late.
 */
export function batchPollDelay(elapsedMs: number, pollMs = 1000, maxPollMs = 15_000): number {
  return Math.max(pollMs, Math.min(maxPollMs, Math.round(elapsedMs / 10)));
}

/** Text, or parts as the API takes them. */
function parts(content: string | ContentPart[]): ContentPart[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

/**
 * The Troupe API, one method per endpoint, typed from the OpenAPI document
 * (src/generated/api.ts), plus the helpers most callers want: sync sends,
 * tool-result submission, a resumable event stream and batch polling.
 * Universal: it needs only fetch, so the browser console uses it too.
 */
export class TroupeClient {
  readonly transport: Transport;

  constructor(opts: ClientOptions) {
    this.transport = new Transport(opts);
  }

  private async data<K extends Api.OperationId>(op: K, args: Args<K>, options?: CallOptions): Promise<Api.Operations[K]['response']> {
    return (await this.transport.call(op, args, options)).data;
  }

  /**
   * Every item of a paged list, fetching the next page (100 at a time) as the loop reaches it:
   *
   *   for await (const s of troupe.each('sessions', (page) => troupe.sessions.list({ ...page, metadata: { user: 'ada' } }))) …
   *   for await (const ev of troupe.each('events', (page) => troupe.sessions.events(sessionId, page))) …
   */
  async *each<K extends string, R extends { has_more: boolean; next_cursor: string | null } & Record<K, unknown[]>>(key: K, list: (page: Required<Pick<Page, 'limit'>> & Page) => Promise<R>): AsyncGenerator<R[K][number]> {
    for (let after: string | undefined; ; ) {
      const page = await list({ limit: 100, after });
      yield* page[key] as R[K][number][];
      if (!page.has_more || !page.next_cursor || page.next_cursor === after) return;
      after = page.next_cursor;
    }
  }

  readonly system = {
    health: () => this.data('getHealthz', {}),
    ready: () => this.data('getReadyz', {}),
    metrics: () => this.data('getMetrics', {}) as Promise<unknown> as Promise<string>,
    openapi: () => this.data('getV1OpenapiJson', {}),
  };

  readonly organization = {
    get: () => this.data('getV1Organization', {}),
    update: (body: Api.PatchV1OrganizationBody) => this.data('patchV1Organization', { body }),
  };

  /** A key's spend budget (null clears it); keys are created with the admin command. */
  readonly keys = {
    setBudget: (id: string, budget: Api.PatchV1KeysKeyIdBody['budget']) => this.data('patchV1KeysKeyId', { path: { key_id: id }, body: { budget } }),
  };

  /**
   * Tokens, model calls and cost of the org, grouped by model, agent or session, a page of groups at a time
   * (totals cover the whole range on every page); every group: `each('groups', (page) => troupe.usage.get({ ...query, ...page }))`.
   */
  readonly usage = {
    get: (query: Api.GetV1UsageQuery = {}) => this.data('getV1Usage', { query }),
  };

  readonly credentials = {
    put: (name: string, value: string) => this.data('putV1CredentialsName', { path: { name }, body: { value } }),
    list: (page: Page = {}) => this.data('getV1Credentials', { query: page }),
    delete: (name: string) => this.data('deleteV1CredentialsName', { path: { name } }),
  };

  readonly sourceSnapshots = {
    reserve: (body: Api.PostV1SourceSnapshotsBody) => this.data('postV1SourceSnapshots', { body }),
    /** PUT to the reservation's upload_url with its upload_headers (the upload token, not the API key). */
    upload: async (reservation: Api.PostV1SourceSnapshotsResponse, archive: Uint8Array | ReadableStream<Uint8Array>): Promise<Api.PutV1SourceSnapshotsSourceSnapshotIdUploadResponse> => {
      const res = await this.transport.raw(reservation.upload_url, {
        method: 'PUT',
        headers: { ...reservation.upload_headers },
        body: archive as RequestInit['body'],
        noAuth: true,
        timeoutMs: 0,
        ...(archive instanceof ReadableStream ? { duplex: 'half' as const } : {}),
      });
      return (await readBody(res)) as Api.PutV1SourceSnapshotsSourceSnapshotIdUploadResponse;
    },
    finalize: (id: string) => this.data('postV1SourceSnapshotsSourceSnapshotIdFinalize', { path: { source_snapshot_id: id } }),
    get: (id: string) => this.data('getV1SourceSnapshotsSourceSnapshotId', { path: { source_snapshot_id: id } }),
    delete: (id: string) => this.data('deleteV1SourceSnapshotsSourceSnapshotId', { path: { source_snapshot_id: id } }),
  };

  readonly agents = {
    create: (body: Api.PostV1AgentsBody) => this.data('postV1Agents', { body }),
    list: (page: Page = {}) => this.data('getV1Agents', { query: page }),
    get: (id: string) => this.data('getV1AgentsAgentId', { path: { agent_id: id } }),
    delete: (id: string) => this.data('deleteV1AgentsAgentId', { path: { agent_id: id } }),
    publishVersion: (id: string, body: Api.PostV1AgentsAgentIdVersionsBody) => this.data('postV1AgentsAgentIdVersions', { path: { agent_id: id }, body }),
    listVersions: (id: string, page: Page = {}) => this.data('getV1AgentsAgentIdVersions', { path: { agent_id: id }, query: page }),
    getVersion: (id: string, versionId: string) => this.data('getV1AgentsAgentIdVersionsVersionId', { path: { agent_id: id, version_id: versionId } }),
    activateVersion: (id: string, versionId: string) => this.data('postV1AgentsAgentIdVersionsVersionIdActivate', { path: { agent_id: id, version_id: versionId } }),
    /** Every agent, following next_cursor. */
    all: async (): Promise<Agent[]> => {
      const out: Agent[] = [];
      for await (const agent of this.each('agents', (page) => this.agents.list(page))) out.push(agent);
      return out;
    },
  };

  readonly routers = {
    put: (id: string, body: Api.PutV1RoutersRouterIdBody) => this.data('putV1RoutersRouterId', { path: { router_id: id }, body }),
    list: (page: Page = {}) => this.data('getV1Routers', { query: page }),
    get: (id: string) => this.data('getV1RoutersRouterId', { path: { router_id: id } }),
    delete: (id: string) => this.data('deleteV1RoutersRouterId', { path: { router_id: id } }),
  };

  readonly files = {
    upload: (file: Blob, filename: string) => {
      const form = new FormData();
      form.append('file', file, filename);
      return this.data('postV1Files', { body: form });
    },
    list: (page: Page = {}) => this.data('getV1Files', { query: page }),
    get: (id: string) => this.data('getV1FilesFileId', { path: { file_id: id } }),
    /** The bytes of a file. */
    content: async (id: string): Promise<Uint8Array> => {
      const res = await this.transport.raw(this.transport.url('getV1FilesFileIdContent', { file_id: id }), { method: 'GET' });
      if (!res.ok) await readBody(res);
      return new Uint8Array(await res.arrayBuffer());
    },
    delete: (id: string) => this.data('deleteV1FilesFileId', { path: { file_id: id } }),
  };

  readonly storageBindings = {
    create: (body: Api.PostV1StorageBindingsBody) => this.data('postV1StorageBindings', { body }),
    list: (query: Api.GetV1StorageBindingsQuery = {}) => this.data('getV1StorageBindings', { query }),
    get: (id: string) => this.data('getV1StorageBindingsStorageBindingId', { path: { storage_binding_id: id } }),
    delete: (id: string) => this.data('deleteV1StorageBindingsStorageBindingId', { path: { storage_binding_id: id } }),
    files: (id: string, query: Api.GetV1StorageBindingsStorageBindingIdFilesQuery = {}) => this.data('getV1StorageBindingsStorageBindingIdFiles', { path: { storage_binding_id: id }, query }),
  };

  /** Cron schedules: each tick opens a session from `session` and sends it `message`. */
  readonly schedules = {
    create: (agentId: string, body: Api.PostV1AgentsAgentIdSchedulesBody) => this.data('postV1AgentsAgentIdSchedules', { path: { agent_id: agentId }, body }),
    list: (agentId: string, page: Page = {}) => this.data('getV1AgentsAgentIdSchedules', { path: { agent_id: agentId }, query: page }),
    get: (id: string) => this.data('getV1SchedulesScheduleId', { path: { schedule_id: id } }),
    update: (id: string, body: Api.PatchV1SchedulesScheduleIdBody) => this.data('patchV1SchedulesScheduleId', { path: { schedule_id: id }, body }),
    pause: (id: string) => this.data('patchV1SchedulesScheduleId', { path: { schedule_id: id }, body: { paused: true } }),
    resume: (id: string) => this.data('patchV1SchedulesScheduleId', { path: { schedule_id: id }, body: { paused: false } }),
    delete: (id: string) => this.data('deleteV1SchedulesScheduleId', { path: { schedule_id: id } }),
    /** Newest tick first. */
    runs: (id: string, page: Page = {}) => this.data('getV1SchedulesScheduleIdRuns', { path: { schedule_id: id }, query: page }),
  };

  readonly webhooks = {
    get: (agentId: string) => this.data('getV1AgentsAgentIdWebhook', { path: { agent_id: agentId } }),
    put: (agentId: string, body: Api.PutV1AgentsAgentIdWebhookBody) => this.data('putV1AgentsAgentIdWebhook', { path: { agent_id: agentId }, body }),
    rotateSecret: (agentId: string) => this.data('postV1AgentsAgentIdWebhookRotateSecret', { path: { agent_id: agentId } }),
    delete: (agentId: string) => this.data('deleteV1AgentsAgentIdWebhook', { path: { agent_id: agentId } }),
    deliveries: (agentId: string, query: Api.GetV1AgentsAgentIdWebhookDeliveriesQuery = {}) => this.data('getV1AgentsAgentIdWebhookDeliveries', { path: { agent_id: agentId }, query }),
    delivery: (agentId: string, deliveryId: string) => this.data('getV1AgentsAgentIdWebhookDeliveriesDeliveryId', { path: { agent_id: agentId, delivery_id: deliveryId } }),
    redeliver: (agentId: string, deliveryId: string) => this.data('postV1AgentsAgentIdWebhookDeliveriesDeliveryIdRedeliver', { path: { agent_id: agentId, delivery_id: deliveryId } }),
  };

  readonly sessions = {
    create: (agentId: string, body: Api.PostV1AgentsAgentIdSessionsBody = {}) => this.data('postV1AgentsAgentIdSessions', { path: { agent_id: agentId }, body }),
    /** Creates a session and sends its first message in one request. */
    start: (agentId: string, content: string | ContentPart[], opts: { metadata?: Record<string, string>; onBusy?: OnBusy; session?: Api.PostV1AgentsAgentIdSessionsBody; idempotencyKey?: string } = {}) =>
      this.data(
        'postV1AgentsAgentIdMessages',
        { path: { agent_id: agentId }, body: { type: 'user.message', content: parts(content), metadata: opts.metadata, on_busy: opts.onBusy, session: opts.session } },
        { headers: idem(opts.idempotencyKey) },
      ),
    get: (id: string) => this.data('getV1SessionsSessionId', { path: { session_id: id } }),
    /** Deletes a session; 409 while it is busy unless `force` cancels its work first. */
    delete: (id: string, opts: { force?: boolean } = {}) => this.data('deleteV1SessionsSessionId', { path: { session_id: id }, query: opts.force ? { force: 'true' } : {} }),
    /** Newest first; `metadata` filters on exact values (every pair must match). */
    list: (opts: Page & { metadata?: Record<string, string> } = {}) =>
      this.data('getV1Sessions', { query: { limit: opts.limit, after: opts.after } }, { extraQuery: Object.fromEntries(Object.entries(opts.metadata ?? {}).map(([k, v]) => [`metadata.${k}`, v])) }),
    /** Appends a user message; answers at once with the queued message. `onBusy`: what it does if the session is busy (409 `session_busy` for `reject`). */
    send: (id: string, content: string | ContentPart[], opts: { metadata?: Record<string, string>; onBusy?: OnBusy; idempotencyKey?: string } = {}) =>
      this.data('postV1SessionsSessionIdEvents', { path: { session_id: id }, body: { type: 'user.message', content: parts(content), metadata: opts.metadata, on_busy: opts.onBusy } }, { headers: idem(opts.idempotencyKey) }),
    /** Answers an external tool call (or reports it failed with isError). */
    submitToolResult: (id: string, call: { message_id: string; tool_call_id: string }, result: unknown, opts: { isError?: boolean; idempotencyKey?: string } = {}) =>
      this.data(
        'postV1SessionsSessionIdEvents',
        { path: { session_id: id }, body: { type: 'tool.result_submitted', message_id: call.message_id, tool_call_id: call.tool_call_id, result, ...(opts.isError ? { is_error: true } : {}) } },
        { headers: idem(opts.idempotencyKey) },
      ),
    /** Answers a `tool.confirmation_requested`: allow runs the call, deny fails it with `denyMessage` as the model's error result (docs/approvals.md). */
    confirmTool: (id: string, call: { message_id: string; tool_call_id: string }, result: 'allow' | 'deny', opts: { denyMessage?: string; idempotencyKey?: string } = {}) =>
      this.data(
        'postV1SessionsSessionIdEvents',
        { path: { session_id: id }, body: { type: 'user.tool_confirmation', message_id: call.message_id, tool_call_id: call.tool_call_id, result, ...(opts.denyMessage !== undefined ? { deny_message: opts.denyMessage } : {}) } },
        { headers: idem(opts.idempotencyKey) },
      ),
    events: (id: string, page: Page = {}) => this.data('getV1SessionsSessionIdEvents', { path: { session_id: id }, query: page }),
    cancel: (id: string, messageId: string) => this.data('postV1SessionsSessionIdMessagesMessageIdCancel', { path: { session_id: id, message_id: messageId } }),
    /**
     * Sends a message and waits for it to finish. Resolves with the message in
     * whatever status it has when it is terminal or `timeoutMs` passes.
     *
     * With neither `timeoutMs` nor `onPoll`, it holds the server's sync wait
     * first (one request, the answer as soon as the message ends), then polls
     * past it. With either, it sends and polls from the start: the server's
     * wait (60 s by default) would outlast a shorter `timeoutMs`, and `onPoll`
     * is how a caller sees a message waiting on an external tool and answers it.
     */
    sync: async (id: string, content: string | ContentPart[], opts: { metadata?: Record<string, string>; onBusy?: OnBusy; timeoutMs?: number; pollMs?: number; onPoll?: (m: Message) => void | Promise<void> } = {}): Promise<Message> => {
      const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
      if (opts.timeoutMs !== undefined || opts.onPoll) {
        const sent = await this.sessions.send(id, content, { metadata: opts.metadata, onBusy: opts.onBusy });
        if (!sent.message) throw new Error('the server accepted the message without a message record');
        return this.sessions.waitForMessage(id, sent.message.id, { ...opts, deadline });
      }
      const first = await this.transport.call('postV1SessionsSessionIdMessagesSync', { path: { session_id: id }, body: { parts: parts(content), metadata: opts.metadata, on_busy: opts.onBusy } }, { timeoutMs: 0 });
      return this.sessions.waitForMessage(id, first.data, { ...opts, deadline });
    },
    /** Polls a message until it is terminal or the deadline passes. */
    waitForMessage: async (id: string, message: Message | string, opts: { deadline?: number; timeoutMs?: number; pollMs?: number; onPoll?: (m: Message) => void | Promise<void> } = {}): Promise<Message> => {
      const deadline = opts.deadline ?? Date.now() + (opts.timeoutMs ?? 120_000);
      let m = typeof message === 'string' ? await this.sessions.message(id, message) : message;
      while (!isTerminal(m.status) && Date.now() < deadline) {
        await opts.onPoll?.(m);
        await sleep(Math.min(opts.pollMs ?? 500, Math.max(0, deadline - Date.now())));
        m = await this.sessions.message(id, m.id);
      }
      return m;
    },
    messages: (id: string, page: Page = {}) => this.data('getV1SessionsSessionIdMessages', { path: { session_id: id }, query: page }),
    message: (id: string, messageId: string) => this.data('getV1SessionsSessionIdMessagesMessageId', { path: { session_id: id, message_id: messageId } }),
    usage: (id: string) => this.data('getV1SessionsSessionIdUsage', { path: { session_id: id } }),
    transcript: (id: string) => this.data('getV1SessionsSessionIdTranscript', { path: { session_id: id } }),
    transcriptText: async (id: string): Promise<string> => String(await this.data('getV1SessionsSessionIdTranscript', { path: { session_id: id }, query: {} }, { extraQuery: { format: 'text' } })),
    /** Tool calls of the running message waiting for a result. */
    pendingToolCalls: async (id: string): Promise<PendingToolCall[]> => (await this.data('getV1SessionsSessionIdToolCalls', { path: { session_id: id } }, { extraQuery: { status: 'pending' } })).tool_calls,
    /** The ledger as an async iterator that resumes by itself after a dropped connection; see streamSession. */
    stream: (id: string, opts: StreamOptions = {}): AsyncGenerator<StreamItem> => streamSession(this.transport, id, opts),
  };

  readonly batches = {
    /** Without `idempotencyKey` a fresh one is sent, so a retry after a lost answer returns the same batch. */
    create: (items: BatchItem[], opts: { idempotencyKey?: string } = {}) =>
      this.data('postV1SessionBatches', { body: { items, idempotency_key: opts.idempotencyKey ?? newIdempotencyKey() } }, { timeoutMs: 0, idempotent: true }),
    get: async (id: string): Promise<Batch> => (await this.data('getV1SessionBatchesBatchId', { path: { batch_id: id }, query: {} })) as Batch,
    /** Status and counts only, without the items: a small read whatever the batch's size. */
    progress: async (id: string): Promise<BatchProgress> => {
      const { sessions: _none, ...progress } = await this.data('getV1SessionBatchesBatchId', { path: { batch_id: id }, query: { include_sessions: 'false' } });
      return progress;
    },
    /**
     * Polls the batch's progress (status and counts, `onProgress` gets each
     * read) until it is terminal (completed, failed, partial_failed) or the
     * timeout passes, then reads it once with its items and resolves with
     * that. Polls back off with the time waited (`batchPollDelay`).
     */
    wait: async (id: string, opts: { timeoutMs?: number; pollMs?: number; maxPollMs?: number; onProgress?: (b: BatchProgress) => void } = {}): Promise<Batch> => {
      const start = Date.now();
      const deadline = start + (opts.timeoutMs ?? 600_000);
      for (;;) {
        const b = await this.batches.progress(id);
        opts.onProgress?.(b);
        if ((TERMINAL_BATCH_STATUSES as readonly string[]).includes(b.status) || Date.now() >= deadline) return this.batches.get(id);
        await sleep(Math.min(batchPollDelay(Date.now() - start, opts.pollMs, opts.maxPollMs), Math.max(0, deadline - Date.now())));
      }
    },
  };
}

export function isTerminal(status: string): boolean {
  return (TERMINAL_MESSAGE_STATUSES as readonly string[]).includes(status);
}

/** The caller's Idempotency-Key, else a fresh one: a retry after a lost answer then gets the first answer instead of doing the work twice. */
function idem(key: string | undefined): Record<string, string> {
  return { 'Idempotency-Key': key ?? newIdempotencyKey() };
}
