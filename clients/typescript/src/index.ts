/**
 * The Troupe TypeScript client for Node.js 20+. `client.ts` alone is
 * universal (fetch only) and is what the browser console loads; this entry
 * adds the Node-only helpers: folder deploys and webhook verification.
 *
 *   const troupe = new TroupeClient({ baseUrl, apiKey });
 *   for await (const ev of troupe.sessions.stream(sessionId)) console.log(ev.type);
 */
export * from './client.js';
export * from './errors.js';
export type * as Api from './generated/api.js';
export { OPERATIONS, type OperationId, type Operations } from './generated/api.js';
export { streamSession, type DeltaEvent, type EventOf, type SessionEvent, type StreamItem, type StreamOptions } from './stream.js';
export { parseSse, type SseRecord } from './sse.js';
export type { Answer, CallOptions, ClientOptions } from './transport.js';
export { deployFolder, DeployError, packFolder, type DeployOptions, type DeployResult, type PackedFolder } from './deploy.js';
export * from './webhooks.js';
