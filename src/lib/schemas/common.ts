import { NAME_TEXT_PATTERN } from '../../domain/name-text.js';
import type { JsonSchema } from './validator.js';

/** The small schemas every schema file uses, each written once. Spread them to add a description: `{ ...time, description }`. */
export const str: JsonSchema = { type: 'string' };
export const nullableString: JsonSchema = { type: ['string', 'null'] };
/** An instant as the API writes it (ISO 8601, UTC). */
export const time: JsonSchema = { type: 'string', format: 'date-time' };
export const nullableTime: JsonSchema = { type: ['string', 'null'], format: 'date-time' };
/** Any JSON object: what the user or a tool chose to send. */
export const anyObject: JsonSchema = { type: 'object', additionalProperties: {} };
/** String keys to string values (metadata, labels). */
export const stringMap: JsonSchema = { type: 'object', additionalProperties: { type: 'string' } };
/** A name people read (agents, sessions, router models): any text but control, bidirectional and invisible characters (src/domain/name-text.ts). */
export const NO_CONTROL_CHARACTERS = NAME_TEXT_PATTERN;
export const nameString = (maxLength: number): JsonSchema => ({ type: 'string', maxLength, pattern: NO_CONTROL_CHARACTERS });
