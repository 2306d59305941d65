import type { PageRequest } from '../../store/page.js';
import { InvalidRequestError } from '../../domain/errors.js';
import { IdPrefix, idPattern, type IdKind } from '../../domain/ids.js';
import { nullableString } from '../../lib/schemas/common.js';
import type { JsonSchema } from '../../lib/schemas/validator.js';
import type { Ctx, RouteSpec } from './types.js';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

const MAX_CURSOR_LENGTH = 200;
const SEQUENCE_CURSOR = '^\\d{1,15}$';
/** A usage group's key (a model name of up to 200 characters, an id, or null) as base64url JSON. */
const GROUP_CURSOR = '^[A-Za-z0-9_-]+$';
const MAX_GROUP_CURSOR_LENGTH = 1100;
/**
 * A file path in a storage binding as a cursor: any characters, up to 1,024 of them, so that the URL that carries
 * it (each character up to 12 bytes percent-encoded) stays within Node's 16 KiB request-header limit (pathCursor).
 */
const MAX_PATH_CURSOR_LENGTH = 1024;

/**
 * The key of a list whose rows are named by their owner (a router id, a credential name): the cursor is the last
 * row's name, so it has the names' pattern and length. `shape` says what it is in the 400.
 */
export interface NameCursor {
  pattern: string;
  maxLength: number;
  shape: string;
}

/**
 * What a list's cursor is: the id of its last row (of this kind), a ledger sequence number, a usage group's key, the
 * path of a storage binding's last file, or the name of its last row.
 */
export type CursorKind = IdKind | 'sequence' | 'group' | 'path' | NameCursor;

/** The one statement of a cursor's shape: the document shows it and parsePage refuses anything else (null: any string). */
function cursorPatternSource(kind: CursorKind): string | null {
  if (typeof kind === 'object') return kind.pattern;
  if (kind === 'sequence') return SEQUENCE_CURSOR;
  if (kind === 'group') return GROUP_CURSOR;
  if (kind === 'path') return null;
  return idPattern(kind);
}

function maxCursorLength(kind: CursorKind | null): number {
  if (kind !== null && typeof kind === 'object') return kind.maxLength;
  if (kind === 'group') return MAX_GROUP_CURSOR_LENGTH;
  if (kind === 'path') return MAX_PATH_CURSOR_LENGTH;
  return MAX_CURSOR_LENGTH;
}

/** What the 400 for a cursor of the wrong shape says it should look like. */
function cursorShape(kind: CursorKind): string {
  if (typeof kind === 'object') return kind.shape;
  if (kind === 'sequence') return 'a sequence number';
  if (kind === 'group') return 'base64url';
  return `an id like ${IdPrefix[kind as IdKind]}_…`;
}

/**
 * The query parameters every list endpoint takes, with the pattern its cursor kind has (none: any string). Routes
 * declare `list` instead, which documents and parses from this.
 */
export function pageQuery(cursor: CursorKind | null = null): JsonSchema {
  const source = cursor ? cursorPatternSource(cursor) : null;
  const pattern = source ? { pattern: source } : {};
  return {
    type: 'object',
    properties: {
      limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
      after: { type: 'string', minLength: 1, maxLength: maxCursorLength(cursor), ...pattern, description: 'Cursor: the next_cursor of the previous page.' },
    },
  };
}

/**
 * A route's query parameters as documented in OpenAPI and checked by the route table: its own, and a list's `limit`
 * and `after` from its `list` declaration, the one that parsePage checks too.
 */
export function querySchema(spec: Pick<RouteSpec, 'query' | 'list'>): JsonSchema | undefined {
  if (!spec.list) return spec.query;
  const paging = pageQuery(spec.list.cursor);
  return { ...paging, properties: { ...(paging.properties as object), ...((spec.query?.properties as object | undefined) ?? {}) } };
}

/** The page a list route was asked for, parsed by the route table from its `list` declaration. */
export function requestedPage(ctx: Ctx): PageRequest {
  const page = ctx.state.page;
  if (!page) throw new Error(`route ${ctx.state.route} read a page without declaring itself a list`);
  return page;
}

/**
 * `idsOf`: the list's cursor is the id of its last row, so an `after` that is not such an id is
 * refused (it would be compared as a position and answer an empty or shifted page without a word).
 */
export function parsePage(query: Record<string, string | string[] | undefined>, idsOf: CursorKind | null = null): PageRequest {
  const rawLimit = query.limit;
  let limit = DEFAULT_LIMIT;
  if (rawLimit !== undefined) {
    if (typeof rawLimit !== 'string' || !/^\d+$/.test(rawLimit) || Number(rawLimit) < 1 || Number(rawLimit) > MAX_LIMIT) {
      throw new InvalidRequestError(`limit must be an integer from 1 to ${MAX_LIMIT}.`, 'limit');
    }
    limit = Number(rawLimit);
  }
  const after = query.after;
  // Characters as JSON Schema counts them (code points), so the document's maxLength and this check agree.
  if (after !== undefined && (typeof after !== 'string' || after.length === 0 || [...after].length > maxCursorLength(idsOf))) {
    throw new InvalidRequestError('after must be a cursor returned as next_cursor.', 'after');
  }
  if (idsOf && after !== undefined && cursorPatternSource(idsOf) !== null && !cursorPattern(idsOf).test(after as string)) {
    throw new InvalidRequestError(`after must be a cursor returned as next_cursor (${cursorShape(idsOf)}).`, 'after');
  }
  return { limit, after: (after as string | undefined) ?? null };
}

/**
 * The cursor after a storage file: its path, or for a path longer than a cursor may be, its first 1,024 characters.
 * Paths sort after their prefixes, so the next page starts no later than the row after; it repeats the rows of
 * this page that share that whole prefix, never misses one.
 */
export function pathCursor(path: string): string {
  const chars = [...path];
  return chars.length <= MAX_PATH_CURSOR_LENGTH ? path : chars.slice(0, MAX_PATH_CURSOR_LENGTH).join('');
}

/** `after` on ledger-ordered lists (events, messages; `list: { cursor: 'sequence' }`), whose parse refused any other shape; 0 when absent. */
export function sequenceCursor(after: string | null): number {
  return after === null ? 0 : Number(after);
}

/** A list's response: its rows under `key`, then whether there is more and the cursor of the next page. */
export function listResponse(key: string, items: JsonSchema): JsonSchema {
  return { type: 'object', required: [key, 'has_more', 'next_cursor'], properties: { [key]: { type: 'array', items }, has_more: { type: 'boolean' }, next_cursor: nullableString } };
}

/**
 * Stores fetch `limit + 1` rows; this trims the extra one and derives
 * `has_more` / `next_cursor` from it.
 */
export function pageOf<T>(rows: T[], limit: number, cursorOf: (row: T) => string): { items: T[]; has_more: boolean; next_cursor: string | null } {
  const has_more = rows.length > limit;
  const items = has_more ? rows.slice(0, limit) : rows;
  return { items, has_more, next_cursor: has_more ? cursorOf(items[items.length - 1]) : null };
}

const CURSOR_PATTERNS = new Map<CursorKind, RegExp>();

/** A cursor of `kind` (an id is newId's shape), compiled once per kind rather than per request. */
function cursorPattern(kind: CursorKind): RegExp {
  let p = CURSOR_PATTERNS.get(kind);
  if (!p) CURSOR_PATTERNS.set(kind, (p = new RegExp(cursorPatternSource(kind) ?? '')));
  return p;
}
