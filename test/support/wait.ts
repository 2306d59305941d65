import assert from 'node:assert/strict';

/** Polls `fn` until it returns something truthy, or fails after `ms`. */
export async function until<T>(fn: () => Promise<T | undefined | false | null>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Asserts the status (showing the body when it differs) and returns the parsed JSON body. */
export async function json<T = Record<string, unknown>>(res: Response, status: number): Promise<T> {
  const text = await res.text();
  assert.equal(res.status, status, text);
  return JSON.parse(text) as T;
}
