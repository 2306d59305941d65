import type { Logger } from '../log/logger.js';
import type { Stores } from '../store/stores.js';

/** Expired reservations are kept this long past `expires_at`, so an upload that started just in time can finish. */
const SNAPSHOT_GRACE_MS = 60 * 60 * 1000;
const SNAPSHOTS_PER_RUN = 500;
/** How long the webhook delivery log keeps finished deliveries. */
export const DELIVERY_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

export interface ReapResult {
  idempotency_keys: number;
  snapshots: number;
  deliveries: number;
}

/**
 * Periodic clean-up in place of TTL indexes, which FerretDB lacks: expired
 * Idempotency-Keys, snapshot reservations never finalized (record and any
 * uploaded bytes), and old finished webhook deliveries. Every step is
 * idempotent, so any number of workers may run it.
 */
export async function reap(stores: Stores, now = Date.now()): Promise<ReapResult> {
  const idempotency_keys = await stores.idempotency.reap(now);
  let snapshots = 0;
  for (const s of await stores.snapshots.expiredReservations(new Date(now - SNAPSHOT_GRACE_MS), SNAPSHOTS_PER_RUN)) {
    if ((await stores.snapshots.deleteUnattached(s.org_id, s._id)) !== 'deleted') continue;
    await stores.blobs.delete('snapshots', s._id);
    snapshots++;
  }
  const deliveries = await stores.webhookDeliveries.reapFinished(new Date(now - DELIVERY_RETENTION_MS));
  return { idempotency_keys, snapshots, deliveries };
}

export function logReap(log: Logger, r: ReapResult): void {
  if (r.idempotency_keys + r.snapshots + r.deliveries > 0) log.info({ reaped: r }, 'reaper');
}
