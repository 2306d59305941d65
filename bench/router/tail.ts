/**
 * What the router's slowest calls have that its typical ones do not (--tail).
 * Around each timed router call the bench reads the router's CPU, main thread
 * and other threads (V8's platform workers: parallel scavenges, concurrent
 * marking; libuv's pool), and per case the router's GC counts from its own
 * /metrics. A tail of work shows as more main-thread CPU in the slow calls
 * (a scavenge, a timer's callback run inside the call); a tail of waiting
 * (for a core on a shared host) as the same CPU over a longer wall time.
 */
export interface TailSample {
  ms: number;
  main: number;
  helpers: number;
}

export interface GcState {
  /** GC count and seconds so far by kind (minor = scavenge, major = mark-sweep-compact, incremental), from prom-client's default metrics. */
  kinds: Map<string, { count: number; seconds: number }>;
  /** The young generation's size now (one semi-space's capacity), in bytes. */
  youngBytes: number;
}

/** The router's GC so far, from its own /metrics. */
export async function gcCounts(origin: string): Promise<GcState> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const kinds = new Map<string, { count: number; seconds: number }>();
  for (const m of text.matchAll(/^troupe_nodejs_gc_duration_seconds_(count|sum)\{[^}]*kind="(\w+)"[^}]*\} ([\d.e+-]+)$/gm)) {
    const e = kinds.get(m[2]) ?? { count: 0, seconds: 0 };
    if (m[1] === 'count') e.count = Number(m[3]);
    else e.seconds = Number(m[3]);
    kinds.set(m[2], e);
  }
  const young = /^troupe_nodejs_heap_space_size_total_bytes\{[^}]*space="new"[^}]*\} ([\d.e+-]+)$/m.exec(text);
  return { kinds, youngBytes: young ? Number(young[1]) : NaN };
}

function describe(group: TailSample[]): string {
  const mean = (f: (s: TailSample) => number) => group.reduce((a, s) => a + f(s), 0) / Math.max(1, group.length);
  const busyHelpers = group.filter((s) => s.helpers > 20).length / Math.max(1, group.length);
  return `${mean((s) => s.ms).toFixed(2)} ms, main thread ${mean((s) => s.main).toFixed(0)} µs, other threads ${mean((s) => s.helpers).toFixed(0)} µs (${(100 * busyHelpers).toFixed(0)}% of calls > 20 µs)`;
}

/** One line: the typical calls (p40-p60) against the slowest 1%, and the router's GC over the case's timed rounds. */
export function reportTail(samples: TailSample[], gc0: GcState, gc1: GcState, calls: number): string {
  const sorted = [...samples].sort((a, b) => a.ms - b.ms);
  const at = (q: number) => Math.floor(q * sorted.length);
  const mid = sorted.slice(at(0.4), at(0.6));
  const slow = sorted.slice(at(0.99));
  const gc = [...gc1.kinds].map(([kind, e]) => {
    const d = { count: e.count - (gc0.kinds.get(kind)?.count ?? 0), seconds: e.seconds - (gc0.kinds.get(kind)?.seconds ?? 0) };
    return d.count ? `${kind} ${(d.count / calls).toFixed(3)}/call (${((d.seconds * 1000) / d.count).toFixed(2)} ms each)` : '';
  }).filter(Boolean);
  const young = `young generation ${(gc0.youngBytes / 2 ** 20).toFixed(1)} → ${(gc1.youngBytes / 2 ** 20).toFixed(1)} MB`;
  return `|   router calls at p40–p60: ${describe(mid)}; its slowest 1% (${slow.length}): ${describe(slow)}; the router's GC over the timed rounds: ${gc.join(', ') || 'none'}; ${young} |`;
}
