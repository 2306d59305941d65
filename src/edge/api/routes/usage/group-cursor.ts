import { InvalidRequestError } from '../../../../domain/errors.js';
import { idPattern } from '../../../../domain/ids.js';
import type { GroupBy } from '../../../../app/usage-report.js';

const AGENT_ID = new RegExp(idPattern('agent'));
const SESSION_ID = new RegExp(idPattern('session'));
const KEY_OF: Record<GroupBy, (key: string) => boolean> = {
  model: (k) => k.length >= 1 && k.length <= 200,
  agent: (k) => AGENT_ID.test(k),
  session: (k) => SESSION_ID.test(k),
};

/**
 * A page of usage groups ends at a key: a model name (any string up to 200
 * characters), an agent or session id, or null (routing-interface traffic,
 * which sorts first). The cursor carries it as base64url JSON, so null and any
 * model name travel unambiguously in a query string.
 */
export function groupCursor(key: string | null): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

/**
 * The key a cursor ends at; a cursor that is not one of this grouping's is a 400 (it would start the page anywhere).
 * Its shape (base64url, its length) was checked as the page was parsed (`list: { cursor: 'group' }`).
 */
export function parseGroupCursor(after: string | null, groupBy: GroupBy): { key: string | null } | undefined {
  if (after === null) return undefined;
  const bad = () => new InvalidRequestError(`after must be a next_cursor returned by GET /v1/usage?group_by=${groupBy}.`, 'after');
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(after, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (key !== null && (typeof key !== 'string' || !KEY_OF[groupBy](key))) throw bad();
  return { key: key as string | null };
}
