import { InvalidRequestError } from './errors.js';

/**
 * One percent-encoded path segment as the id it names. `decodeURIComponent`
 * throws a URIError on a malformed escape (`%ZZ`, a lone `%`, an invalid
 * UTF-8 sequence): that is the client's mistake, a 400, and never a throw
 * that escapes a request listener.
 */
export function decodePathSegment(raw: string, param: string): string {
  if (!raw.includes('%')) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new InvalidRequestError(`The path segment for ${param} is not valid percent-encoding.`, param, 'malformed_path');
  }
}
