type Level = Map<string, Level | Record<string, string>>;

/** Label sets remembered before the cache is cleared: values come from routes, statuses and model names, so few. */
const MAX_SETS = 10_000;

/**
 * One label object per combination of values, made once. prom-client takes a
 * label object on every update; building a fresh one per update (and spread
 * copies for related series) was most of what metrics allocated on a routed
 * call. prom-client keeps the first object it sees for a series, so the
 * objects handed out here are never changed.
 */
export class LabelSets<L extends Record<string, string>> {
  private root: Level = new Map();
  private size = 0;

  constructor(private readonly names: readonly (keyof L & string)[]) {
    if (names.length < 1 || names.length > 4) throw new Error('LabelSets takes 1 to 4 label names');
  }

  /** The labels for these values, in the order of the names given to the constructor. */
  of(a: string, b = '', c = '', d = ''): L {
    let level = this.root;
    const n = this.names.length;
    for (let i = 0; i < n - 1; i++) {
      const v = i === 0 ? a : i === 1 ? b : c;
      let next = level.get(v) as Level | undefined;
      if (!next) level.set(v, (next = new Map()));
      level = next;
    }
    const last = n === 1 ? a : n === 2 ? b : n === 3 ? c : d;
    let labels = level.get(last) as L | undefined;
    if (!labels) {
      if (this.size >= MAX_SETS) {
        // Past the bound, start over, and walk again from the new, empty root.
        [this.root, this.size] = [new Map(), 0];
        return this.of(a, b, c, d);
      }
      this.size++;
      labels = this.make(a, b, c, d);
      level.set(last, labels);
    }
    return labels;
  }

  private make(a: string, b: string, c: string, d: string): L {
    const values = [a, b, c, d];
    const labels: Record<string, string> = {};
    this.names.forEach((name, i) => (labels[name] = values[i]));
    return labels as L;
  }
}
