import { createHash } from 'node:crypto';
import type { RedisClient } from '../redis/connection.js';
import type { RedisKeys } from '../redis/keys.js';
import type { Item, LlmRequest } from '../llm/types.js';
import type { Effort } from '../../domain/providers.js';
import { ExpiringCache } from '../../domain/expiring-cache.js';

/**
 * Every turn of a conversation hashes the same opening, so ids are kept for a minute. Only short openings:
 * a long system prompt or an image would make the cache's memory the larger cost.
 */
const ID_CACHE_MAX_CHARS = 4096;
const ids = new ExpiringCache<string>(60_000, 10_000);

/**
 * `conversation_id`: a hash of the conversation's opening items (system text
 * and the first user message), taken from the canonical request, so the same
 * conversation gets the same id whichever format it arrives in, on every turn.
 */
export function conversationId(req: LlmRequest): string {
  const first = req.items.find((it): it is Extract<Item, { kind: 'message' }> => it.kind === 'message' && it.role === 'user');
  const opening = JSON.stringify([req.system ?? '', first?.content ?? []]);
  const small = opening.length <= ID_CACHE_MAX_CHARS;
  const hit = small ? ids.get(opening) : undefined;
  if (hit) return hit;
  const id = 'conv_' + createHash('sha256').update(opening).digest('hex').slice(0, 32);
  if (small) ids.set(opening, id);
  return id;
}

export interface StickyRecord {
  model: string;
  /** Request-level effort when the conversation uses configuration updates; it must not change. */
  request_effort?: Effort | null;
}

const TTL_SECONDS = 7 * 24 * 3600;
const LOCAL_TTL_MS = 10_000;
const LOCAL_MAX = 50_000;

/**
 * Which model a conversation is on, kept in Redis for a week after its last
 * write. Found records are also kept in-process for a few seconds: every turn
 * of a conversation looks its record up, and a record changes only when its
 * model stops being eligible, so a turn in a busy conversation skips the
 * Redis round trip. Misses always go to Redis.
 */
export class Stickiness {
  private readonly local = new ExpiringCache<StickyRecord>(LOCAL_TTL_MS, LOCAL_MAX);

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
  ) {}

  async get(orgId: string, routerId: string, convId: string): Promise<StickyRecord | null> {
    const key = this.keys.routingConversation(orgId, routerId, convId);
    const hit = this.local.get(key);
    if (hit) return hit;
    const raw = await this.redis.get(key);
    if (!raw) return null;
    try {
      const rec = JSON.parse(raw) as StickyRecord;
      this.local.set(key, rec);
      return rec;
    } catch {
      return null;
    }
  }

  async set(orgId: string, routerId: string, convId: string, rec: StickyRecord): Promise<void> {
    const key = this.keys.routingConversation(orgId, routerId, convId);
    this.local.set(key, rec);
    await this.redis.set(key, JSON.stringify(rec), 'EX', TTL_SECONDS);
  }
}
