/** What an answered call settles its admissions with: its tokens in and out, and its priced cost in USD (0 in another currency). */
export interface CallUsage {
  tokens: number;
  usd: number;
}

/** What a routed call holds under one admission it passed, until the call ends. */
export interface Admitted {
  /** The call answered with this usage (a stream, on its finish event). */
  settle(usage: CallUsage): void;
  /** The call ended without usage (failed, cancelled, or refused by another admission): give back what it holds. */
  release(): void;
}

/**
 * One check a routed call passes before any upstream is called (the request rate, the token rate, the budgets; a
 * further one is one more entry). The caller starts it as early as it has what the check needs, so its round trip
 * overlaps what comes next; it resolves to what the call holds under it (null: nothing to settle or give back), or
 * rejects with its refusal, a TroupeError carrying its status and headers (429 with RateLimit-*, 402).
 */
export type Admission = Promise<Admitted | null>;

/** Marks an admission's refusal as seen, so it is not an unhandled rejection before its turn to be awaited. */
export function started(a: Admission): Admission {
  a.catch(() => undefined);
  return a;
}

/**
 * Awaits the admissions in order: what each holds (nulls left out), or the first refusal, after what the others
 * passed with is given back.
 */
export async function admitAll(admissions: readonly Admission[]): Promise<Admitted[]> {
  const held: Admitted[] = [];
  for (let i = 0; i < admissions.length; i++) {
    let a: Admitted | null;
    try {
      a = await admissions[i];
    } catch (refusal) {
      await releaseAll(admissions.slice(i + 1), held);
      throw refusal;
    }
    if (a) held.push(a);
  }
  return held;
}

/**
 * The call failed before it was admitted (a bad body, no eligible model): a refusal outranks what is wrong with the
 * request, so the first one is thrown in place of `e`; whatever passed is given back.
 */
export async function abandon(admissions: readonly Admission[], e: unknown): Promise<never> {
  await admitAll(admissions).then((held) => held.forEach(release));
  throw e;
}

/** Settles every admission with the answered call's usage. */
export function settleAll(held: readonly Admitted[], usage: CallUsage): void {
  for (const a of held) a.settle(usage);
}

async function releaseAll(rest: readonly Admission[], held: Admitted[]): Promise<void> {
  held.forEach(release);
  for (const p of rest) (await p.catch(() => null))?.release();
}

const release = (a: Admitted) => a.release();
