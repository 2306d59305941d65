/**
 * `Retry-After` as delay-seconds or an HTTP date, in milliseconds from `now`; null when absent or unreadable. Read
 * for upstream model answers (src/lib/llm) and webhook receivers (actors/webhook) alike. Seconds may carry a
 * fraction, which some model providers send; they are checked before the date, since Date.parse reads a bare
 * number as a year.
 */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | null {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return null;
  const text = raw.trim();
  if (text === '') return null;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}
