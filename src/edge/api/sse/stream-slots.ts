import { RateLimitError } from '../../../domain/errors.js';

/** How soon a refused client may try again: streams free no slot on a schedule, so a short, fixed wait. */
export const STREAM_SLOT_RETRY_SECONDS = 5;

/**
 * Open session streams per org and per API key, in this web process. A stream
 * costs the process a socket, a subscription and its buffers, so the cap is
 * the process's own (N web processes hold up to N times it); no shared counter
 * has to be repaired when a process dies holding slots. 0 = no cap.
 */
export class StreamSlots {
  private readonly byOrg = new Map<string, number>();
  private readonly byKey = new Map<string, number>();

  constructor(
    private readonly perOrg: number,
    private readonly perKey: number,
    /** Counts a refusal by the cap it met (metrics). */
    private readonly onRefused: (scope: 'org' | 'key') => void = () => undefined,
  ) {}

  /** Takes a slot, or throws 429 (concurrency_limited, Retry-After); the returned release is safe to call twice. */
  acquire(orgId: string, keyId: string): () => void {
    if (this.perKey > 0 && (this.byKey.get(keyId) ?? 0) >= this.perKey) {
      this.onRefused('key');
      throw refused(`this API key has ${this.perKey} event streams open`, 'TROUPE_SSE_MAX_STREAMS_PER_KEY');
    }
    if (this.perOrg > 0 && (this.byOrg.get(orgId) ?? 0) >= this.perOrg) {
      this.onRefused('org');
      throw refused(`this organization has ${this.perOrg} event streams open`, 'TROUPE_SSE_MAX_STREAMS_PER_ORG');
    }
    bump(this.byOrg, orgId, 1);
    bump(this.byKey, keyId, 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      bump(this.byOrg, orgId, -1);
      bump(this.byKey, keyId, -1);
    };
  }
}

function bump(counts: Map<string, number>, id: string, by: number): void {
  const n = (counts.get(id) ?? 0) + by;
  if (n > 0) counts.set(id, n);
  else counts.delete(id);
}

function refused(what: string, setting: string): RateLimitError {
  return new RateLimitError(`Too many open event streams: ${what} on this server (${setting}); close one or retry later.`, 'concurrency_limited', { 'Retry-After': String(STREAM_SLOT_RETRY_SECONDS) });
}
