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
