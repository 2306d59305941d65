/** The throughput sweep: requests/s through the router at rising concurrency, with p50 and p99. */
import { fmt, summary } from '../support/percentiles.js';
import type { Path } from './paths.js';

/** Rising concurrency; the answer to "requests/s at p99 <= 15 ms" is the best rate whose p99 stays under the bound. */
export async function throughput(routed: Path, seconds: number): Promise<void> {
  console.log('\n| concurrency | requests/s | p50 | p99 |\n|---|---|---|---|');
  let best = 0;
  for (const c of [1, 2, 4, 8, 16, 32, 64, 128]) {
    const lat: number[] = [];
    const until = performance.now() + seconds * 1000;
    await Promise.all(Array.from({ length: c }, async () => {
      while (performance.now() < until) lat.push((await routed())[0]);
    }));
    const s = summary(lat);
    const rps = lat.length / seconds;
    if (s.p99 <= 15) best = Math.max(best, rps);
    console.log(`| ${c} | ${rps.toFixed(0)} | ${fmt(s.p50)} | ${fmt(s.p99)} |`);
  }
  console.log(`\nrequests/s at p99 <= 15 ms: ${best.toFixed(0)}`);
}
