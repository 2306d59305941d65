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

/**
 * What the API tells a client to do with a 503 `session_timeout` or `session_unavailable` ("the command may still be
 * applied. Retry with the same Idempotency-Key"): send `request` again, at most `attempts` times in all. For tests
 * whose subject is not the reply time (a loaded host or a failover can outlast the 15 s wait); the request must carry
 * an Idempotency-Key, so a retry never applies the command twice. Any other answer is returned as it is.
 */
export async function retryingSessionTimeout(request: () => Promise<Response>, attempts = 3): Promise<Response> {
  for (let i = 1; ; i++) {
    const res = await request();
    if (res.status !== 503 || i >= attempts) return res;
    const body = (await res.clone().json().catch(() => null)) as { error?: { code?: string } } | null;
    if (body?.error?.code !== 'session_timeout' && body?.error?.code !== 'session_unavailable') return res;
    await res.arrayBuffer();
  }
}
