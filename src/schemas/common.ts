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
/** A name people read (agents, sessions, router models): any text but control characters, which terminals and logs misrender. */
export const NO_CONTROL_CHARACTERS = '^[^\\u0000-\\u001f\\u007f]*$';
export const nameString = (maxLength: number): JsonSchema => ({ type: 'string', maxLength, pattern: NO_CONTROL_CHARACTERS });
