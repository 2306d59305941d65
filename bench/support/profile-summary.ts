/**
 * Summarises V8 CPU profiles (the workers' `--cpu-prof` output, see
 * BENCH_CPU_PROF_DIR) by where the self time went: an npm package, a part of
 * Troupe (its top folders), Node's internals by module, or V8's own buckets
 * (garbage collector, program, idle). For explaining a benchmark's ceiling.
 * Usage: node dist/bench/support/profile-summary.js <file.cpuprofile>...
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  hitCount?: number;
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
}

/** The bucket a frame's self time is counted in. */
export function bucketOf(frame: ProfileNode['callFrame']): string {
  const { url, functionName } = frame;
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/').slice(0, 2).join('/')}`;
  const own = /\/dist\/((?:src|actors|infra)\/[^/]+)/.exec(url);
  return own ? `troupe ${own[1]}` : url;
}

export function summarise(profile: Profile): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const counts = new Map<string, number>();
  for (const id of profile.samples) {
    const bucket = bucketOf(byId.get(id)!.callFrame);
    counts.set(bucket, (counts.get(bucket) ?? 0) + 1);
  }
  return counts;
}

if (require.main === module) {
  for (const file of process.argv.slice(2)) {
    const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
    const counts = summarise(profile);
    const total = profile.samples.length;
    const idle = counts.get('(idle)') ?? 0;
    console.log(`${file}: ${((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s profiled, busy ${(100 * (1 - idle / total)).toFixed(0)}% of samples`);
    const busy = [...counts].filter(([k]) => k !== '(idle)').sort((a, b) => b[1] - a[1]);
    for (const [k, n] of busy.slice(0, 15)) console.log(`  ${(100 * n / (total - idle)).toFixed(1).padStart(5)}%  ${k}`);
  }
}
