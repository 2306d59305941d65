/**
 * `p`, or what `late()` gives if `p` has not settled within `ms` (a `late`
 * that throws rejects). The timer never outlives the race: a deadline that
 * lost must not hold a stopping process or fire later.
 */
export async function within<T, L>(p: Promise<T>, ms: number, late: () => L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<L>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(late());
      } catch (err) {
        reject(err);
      }
    }, ms);
  });
  try {
    return await Promise.race([p, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
