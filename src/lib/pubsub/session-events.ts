import type { EventEnvelope } from '../../domain/ledger.js';

/** Non-ledger hint on a session's events channel: open streams of a deleted session end. */
export const SESSION_DELETED = 'session.deleted';

export interface SessionDeletedHint {
  type: typeof SESSION_DELETED;
  session_id: string;
}

/** One item of a session's live hint: the envelope, and its JSON as published (an SSE record's data as is). */
export interface LiveEvent {
  ev: EventEnvelope | SessionDeletedHint;
  json: string;
}

/**
 * A turn publishes ONE message on its session's events channel however many
 * events it appended: their envelopes' JSON, one per line (JSON.stringify never
 * writes a raw newline). One PUBLISH per turn instead of one per event, and a
 * reader fans a turn out to its streams in one socket write; the lines keep
 * the JSON as written, so an SSE record sends it without serializing again.
 */
export function encodeSessionEvents(items: readonly (EventEnvelope | SessionDeletedHint)[]): string {
  return items.map((e) => JSON.stringify(e)).join('\n');
}

let lastRaw: string | null = null;
let lastDecoded: readonly LiveEvent[] = [];

/**
 * The items of one message, in order. Every listener of a channel gets the
 * same string, so the last one decoded is reused: several streams of a
 * session parse a turn once. The result is shared and must not be changed.
 */
export function decodeSessionEvents(raw: string): readonly LiveEvent[] {
  if (raw === lastRaw) return lastDecoded;
  const decoded = raw.split('\n').map((json) => ({ ev: JSON.parse(json) as LiveEvent['ev'], json }));
  lastRaw = raw;
  lastDecoded = decoded;
  return decoded;
}
