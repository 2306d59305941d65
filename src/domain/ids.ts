import { monotonicFactory } from 'ulid';

const next = monotonicFactory();

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
} as const);

export type IdKind = keyof typeof IdPrefix;

/** Time-ordered, so ids double as pagination cursors and creation order. */
export function newId(kind: IdKind): string {
  return `${IdPrefix[kind]}_${next().toLowerCase()}`;
}
