import { TroupeError } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import type { ContentBlock } from '../../domain/ledger.js';
import type { SecretBox } from '../../lib/crypto/secret-box.js';
import type { FileStore } from '../../store/files.js';
import { checkUserMessage } from '../sessions/send-user-message.js';
import { buildSession, versionFor } from '../sessions/create-session.js';
import type { AgentStore, AgentVersionDoc } from '../../store/agents.js';
import { firstTurn, type FirstTurn } from './first-turn.js';
import type { BatchItem } from '../../domain/views/batch-item.js';

/** One item of `POST /v1/session-batches`, as validated by the schema. */
export interface BatchItemInput {
  agent_id: string;
  version_id?: string;
  llm_id?: string;
  metadata?: Record<string, string>;
  secrets?: Record<string, string>;
  budget_usd?: number;
  message: { content: ContentBlock[] };
}

/** An item that will get a session, or one that failed on its own. */
export type PlannedItem = { index: number; turn: FirstTurn } | { index: number; rejected: BatchItem };

export function transcriptUrl(sessionId: string): string {
  return `/v1/sessions/${sessionId}/transcript`;
}

/** Validates one raw item, throwing a 400-style error that names the field; supplied by the HTTP layer. */
export type ItemCheck = (item: unknown, index: number) => BatchItemInput | Promise<BatchItemInput>;

/**
 * An item's check: its shape (`validate`, the HTTP layer's schema), then the
 * checks every user message gets (src/app/sessions/send-user-message.ts),
 * whose errors name the item's field. The running-session cap is not one of
 * them: a batch's sessions queue behind interactive work and are never refused.
 * The files the items name are read in one query for the whole batch (`raws`).
 */
export function batchItemCheck(files: Pick<FileStore, 'missing'>, orgId: string, validate: (item: unknown, index: number) => BatchItemInput, raws: readonly unknown[] = []): ItemCheck {
  const lookup = batchFileLookup(files, orgId, raws);
  return async (item, index) => {
    const input = validate(item, index);
    await checkUserMessage(lookup, orgId, { content: input.message.content, param: `items[${index}].message.content` });
    return input;
  };
}

/** The `file_id`s an unvalidated item names, read leniently: its schema check comes later and reports what is wrong. */
function fileIdsOf(raw: unknown): string[] {
  const content = (raw as { message?: { content?: unknown } } | null)?.message?.content;
  if (!Array.isArray(content)) return [];
  return content.flatMap((b: unknown) => (b && typeof b === 'object' && typeof (b as { file_id?: unknown }).file_id === 'string' ? [(b as { file_id: string }).file_id] : []));
}

/**
 * Answers `missing` for the batch's items from one query over every file id they name, made at the first item
 * that names one, instead of one query per item: a batch of 10,000 items naming files would otherwise cost 10,000
 * reads before it is answered (the API fuzzer's batch of file items timed out on it). An id outside that set (none,
 * unless validation changed it) is read on its own.
 */
function batchFileLookup(files: Pick<FileStore, 'missing'>, orgId: string, raws: readonly unknown[]): Pick<FileStore, 'missing'> {
  const named = new Set(raws.flatMap(fileIdsOf));
  let missingOfBatch: Promise<Set<string>> | null = null;
  return {
    async missing(org, ids) {
      if (org !== orgId || !ids.every((id) => named.has(id))) return files.missing(org, ids);
      missingOfBatch ??= files.missing(orgId, [...named]).then((m) => new Set(m));
      const missing = await missingOfBatch;
      return ids.filter((id) => missing.has(id));
    },
  };
}

const stringOr = (v: unknown, fallback: string | null): string | null => (typeof v === 'string' ? v : fallback);

function stringMap(v: unknown): Record<string, string> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return {};
  return Object.values(v).every((x) => typeof x === 'string') ? (v as Record<string, string>) : {};
}

/**
 * A failed item echoes what it can of its input. The input may be anything
 * (it failed validation), so only well-typed fields are copied.
 */
export function rejectedItem(index: number, input: unknown, error: string, agentId: string): BatchItem {
  const raw = (input && typeof input === 'object' ? input : {}) as Record<string, unknown>;
  return {
    index,
    session_id: null,
    status: 'failed',
    last_message_status: null,
    agent_id: stringOr(raw.agent_id, agentId)!,
    version_id: stringOr(raw.version_id, null),
    llm_id: stringOr(raw.llm_id, null),
    metadata: stringMap(raw.metadata),
    transcript_url: null,
    error,
  };
}

export function createdItem(index: number, turn: FirstTurn): BatchItem {
  const s = turn.session;
  return {
    index,
    session_id: s._id,
    status: s.status,
    last_message_status: s.last_message_status,
    agent_id: s.agent_id,
    version_id: s.version_id,
    llm_id: s.llm_id,
    metadata: s.metadata,
    transcript_url: transcriptUrl(s._id),
    error: null,
    message_id: turn.message._id,
  };
}

/**
 * Builds every item's session and first turn in memory. Versions are looked
 * up once per distinct `version_id`, so thousands of items cost a handful of
 * reads. An invalid item or a domain error (unknown version, bad llm_id)
 * fails that item only.
 */
export async function planItems(agents: AgentStore, box: SecretBox, publicUrl: string, orgId: string, batch: { id: string; agentId: string; apiKeyId?: string }, raws: unknown[], checkItem: ItemCheck): Promise<PlannedItem[]> {
  const versions = new Map<string, Promise<AgentVersionDoc>>();
  const versionOf = (input: BatchItemInput) => {
    const key = input.version_id ?? '';
    let v = versions.get(key);
    if (!v) {
      v = versionFor(agents, orgId, input.agent_id, input.version_id);
      // Settled here so an unknown version is not an unhandled rejection before its items await it.
      v.catch(() => undefined);
      versions.set(key, v);
    }
    return v;
  };
  const now = new Date();
  const planned: PlannedItem[] = [];
  for (const [index, raw] of raws.entries()) {
    try {
      const input = await checkItem(raw, index);
      const version = await versionOf(input);
      const doc = buildSession(box, orgId, version, { metadata: input.metadata, secrets: input.secrets, llm_id: input.llm_id, budget_usd: input.budget_usd }, { priority: 'batch', batch_id: batch.id, api_key_id: batch.apiKeyId });
      planned.push({ index, turn: firstTurn(doc, version, publicUrl, newId('message'), input.message.content, now) });
    } catch (err) {
      if (!(err instanceof TroupeError)) throw err;
      // The error names the field when its message does not already.
      const error = err.param && !err.message.includes(err.param) ? `${err.message} (${err.param})` : err.message;
      planned.push({ index, rejected: rejectedItem(index, raw, error, batch.agentId) });
    }
  }
  return planned;
}
