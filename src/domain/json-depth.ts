/**
 * How deep JSON a client hands Troupe may nest arrays and objects: request bodies of the base API and the JSON
 * files of an agent's archive. Deeper JSON was parsed, then overflowed the call stack in JSON.stringify (the
 * Idempotency-Key hash, the session actor's job, a version's stored content): a 500. 100 is MongoDB's document
 * depth, and leaves a client whose parser stops at 128 levels (serde_json) able to read a free-form value (a tool
 * result) inside the events list's page and envelope.
 */
export const MAX_JSON_DEPTH = 100;

/** JSON nested deeper than a reader takes; its message reads after the name of what was read ("Request body …"). */
export class JsonTooDeepError extends Error {
  constructor(readonly maxDepth: number) {
    super(`nests arrays and objects more than ${maxDepth} levels deep`);
    this.name = 'JsonTooDeepError';
  }
}

/**
 * Whether a parsed JSON value nests arrays and objects more than `max` levels deep (a bare `{}` is one level),
 * judged with an explicit stack rather than recursion: JSON.parse accepts any depth a body's size allows, while
 * JSON.stringify and the recursive walks after it overflow the call stack a few thousand levels down.
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  const stack: [object, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (depth > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === 'object') stack.push([child as object, depth + 1]);
    }
  }
  return false;
}
