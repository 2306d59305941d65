/**
 * Characters a name (agent, manifest, session, router model) may not hold: they are invisible or change how the
 * text around them is shown, so a name could read as another in the console, a terminal or a log. Why each range,
 * and what stays allowed: docs/decisions.md, "Names refuse control characters".
 * - U+0000-U+001F, U+007F-U+009F: C0 and C1 controls (ESC starts terminal sequences, CSI is U+009B).
 * - U+061C, U+200E, U+200F: the bidirectional marks; U+202A-U+202E and U+2066-U+2069: the bidirectional
 *   embeddings, overrides and isolates ("Trojan Source").
 * - U+2028, U+2029: line and paragraph separators, a line break by another name.
 * - U+200B, U+2060, U+FEFF: zero-width space, word joiner and zero-width no-break space (BOM): invisible.
 */
const REFUSED = '\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200b\\u200e\\u200f\\u2028-\\u202e\\u2060\\u2066-\\u2069\\ufeff';

/** The rule as a JSON Schema `pattern`, published in /v1/openapi.json. */
export const NAME_TEXT_PATTERN = `^[^${REFUSED}]*$`;

const FIRST_REFUSED = new RegExp(`[${REFUSED}]`);
const EVERY_REFUSED = new RegExp(`[${REFUSED}]`, 'g');

/** The first character a name may not hold, written `U+202E`; null when there is none. */
export function refusedInName(name: string): string | null {
  const m = FIRST_REFUSED.exec(name);
  return m ? `U+${m[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}` : null;
}

/** The name without the characters it may not hold: for names taken as sent rather than judged (upload filenames). */
export function withoutRefused(name: string): string {
  return name.replace(EVERY_REFUSED, '');
}
