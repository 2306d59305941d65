import { randomFillSync } from 'node:crypto';
import { monotonicFactory } from 'ulid';

const pool = new Uint8Array(4096);
let used = pool.length;

/**
 * ulid's own source of randomness asks the OS for one byte per character (16
 * calls per id, a few percent of a web process's CPU under load); this takes
 * the same CSPRNG bytes, the same way (byte / 256), from a buffer filled 4 KiB at a time.
 */
function pooledRandom(): number {
  if (used === pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  return pool[used++] / 256;
}

const next = monotonicFactory(pooledRandom);

/** Resource id prefixes, so an id says what it names. */
export const IdPrefix = Object.freeze({
  org: 'org',
  apiKey: 'key',
  agent: 'agt',
  version: 'ver',
  snapshot: 'snap',
  session: 'ses',
  message: 'msg',
  file: 'file',
  batch: 'bat',
  storageBinding: 'sb',
  storageBlob: 'sblob',
  delivery: 'whd',
  request: 'req',
  schedule: 'sch',
} as const);

export type IdKind = keyof typeof IdPrefix;

/** The shape of an id of `kind` (newId's), as a pattern source for schemas and checks. */
export function idPattern(kind: IdKind): string {
  return `^${IdPrefix[kind]}_[0-9a-z]{26}$`;
}

/** Time-ordered, so ids double as pagination cursors and creation order. */
export function newId(kind: IdKind): string {
  return `${IdPrefix[kind]}_${next().toLowerCase()}`;
}
