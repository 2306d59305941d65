/**
 * Summarises a V8 .cpuprofile of the router: self time by function and by
 * where the code lives (Troupe's own files, each package, Node internals),
 * so docs/benchmarks.md can say where a routed call's CPU goes.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

function where(url: string): string {
  if (!url) return '(native / GC / idle)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  if (url.startsWith('node:')) return 'node internals';
  const own = /\/dist\/(src\/[^:]+)/.exec(url);
  return own ? own[1] : url;
}

/** The monotonic clock in µs, as a CPU profile's timestamps read it: how a `window` is taken. */
export const profileClock = (): number => Number(process.hrtime.bigint() / 1000n);

/**
 * `window`: only the samples taken between these two moments (µs on the monotonic clock, as
 * `process.hrtime.bigint() / 1000n` reads it, which is the profile's clock too), so start-up and warm-up
 * are left out.
 */
export function summariseProfile(dir: string, window?: [number, number]): void {
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) return void console.log(`no .cpuprofile in ${dir}`);
  const prof = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number };
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const counts = new Map<number, number>();
  let t = prof.startTime;
  let total = 0;
  prof.samples.forEach((s, i) => {
    t += prof.timeDeltas[i] ?? 0;
    if (window && (t < window[0] || t > window[1])) return;
    counts.set(s, (counts.get(s) ?? 0) + 1);
    total++;
  });
  const fns = new Map<string, number>();
  const places = new Map<string, number>();
  for (const [id, c] of counts) {
    const n = byId.get(id)!;
    const name = n.callFrame.functionName || '(anonymous)';
    if (name === '(idle)' || name === '(program)') continue;
    const place = where(n.callFrame.url);
    const key = `${name} — ${place}${n.callFrame.url ? `:${n.callFrame.lineNumber + 1}` : ''}`;
    fns.set(key, (fns.get(key) ?? 0) + c);
    places.set(place, (places.get(place) ?? 0) + c);
  }
  const idle = [...counts].filter(([id]) => byId.get(id)!.callFrame.functionName === '(idle)').reduce((a, [, c]) => a + c, 0);
  const busy = total - idle;
  const pct = (c: number) => `${((100 * c) / busy).toFixed(1)}%`;
  console.log(`\nrouter CPU profile${window ? ', timed rounds only' : ''}: ${total} samples, ${((100 * busy) / total).toFixed(0)}% busy; shares below are of busy samples (${file})`);
  console.log('\n| where | self time |\n|---|---|');
  for (const [p, c] of [...places].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`| ${p} | ${pct(c)} |`);
  console.log('\n| function | self time |\n|---|---|');
  for (const [f, c] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`| ${f} | ${pct(c)} |`);
  console.log('\n| Troupe function (with what it calls) | total time |\n|---|---|');
  for (const [f, c] of inclusive(prof.nodes, counts).slice(0, 15)) console.log(`| ${f} | ${pct(c)} |`);
}

/** Time in each of Troupe's own functions including its callees: where a request's CPU is spent, by step. */
function inclusive(nodes: ProfileNode[], counts: Map<number, number>): [string, number][] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const total = new Map<string, number>();
  for (const [id, c] of counts) {
    if (['(idle)', '(program)'].includes(byId.get(id)!.callFrame.functionName)) continue;
    const seen = new Set<string>();
    for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) {
      const f = byId.get(x)!.callFrame;
      const own = /\/dist\/(src\/[^:]+)/.exec(f.url);
      const key = own && `${f.functionName || '(anonymous)'} — ${own[1]}:${f.lineNumber + 1}`;
      if (key && !seen.has(key)) {
        seen.add(key);
        total.set(key, (total.get(key) ?? 0) + c);
      }
    }
  }
  return [...total].sort((a, b) => b[1] - a[1]);
}

if (require.main === module) summariseProfile(process.argv[2]);
