import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Cluster, type RoleProcess } from './support/cluster.js';

/** What an operator expects of a SIGTERM with Redis gone: nothing can be handed back, so the process exits at once. */
const PROMPT_EXIT_MS = 8000;
/** Prometheus's default scrape timeout is 10 s; a scrape must answer well within it during an outage. */
const SCRAPE_MS = 6000;
const ROLES = ['web', 'router', 'worker', 'webhooks'] as const;

/** Where a role answers /healthz and /metrics: its HTTP port, or METRICS_PORT (from its `metrics listening` line). */
function probeBase(p: RoleProcess): string {
  if (p.url) return p.url;
  const line = p.lines.find((l) => l.includes('"msg":"metrics listening"'));
  assert.ok(line, `${p.name} logged its metrics port`);
  return `http://127.0.0.1:${(JSON.parse(line) as { port: number }).port}`;
}

describe('fault: Redis down under a split deploy', function () {
  let c: Cluster;
  before(async () => {
    // The production shutdown timeout: a process that waits on the dead Redis sits out all of it (exit code 1).
    c = await Cluster.start({ env: { TROUPE_SHUTDOWN_TIMEOUT_MS: '25000', TROUPE_DRAIN_DELAY_MS: '0' } });
    for (const role of ROLES) await c.start(role, role);
    await c.stopRedis();
    // Every process has noticed: its connections are between reconnect attempts (where ioredis never ends a close).
    for (const role of ROLES) {
      const p = c.procs.get(role)!;
      for (let i = 0; i < 100 && !p.lines.some((l) => l.includes('redis connection error')); i++) await new Promise((r) => setTimeout(r, 100));
      assert.ok(p.lines.some((l) => l.includes('redis connection error')), `${role} saw Redis go`);
    }
    await new Promise((r) => setTimeout(r, 1500));
  });
  after(async () => c?.close());

  it('each process says once that Redis went, not once per connection', async () => {
    for (const role of ROLES) {
      const lines = c.procs.get(role)!.lines.filter((l) => l.includes('"msg":"redis connection error; reconnecting"'));
      // One, or two should a late connection report after the 10 s window; a worker holds about 70.
      assert.ok(lines.length >= 1 && lines.length <= 2, `${role}: ${lines.length} lines\n${lines.slice(0, 5).join('\n')}`);
    }
  });

  it('every role stays live and scrapable; web is not ready, the router is (docs/operations.md, Probes)', async () => {
    for (const role of ROLES) {
      const base = probeBase(c.procs.get(role)!);
      assert.equal((await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(SCRAPE_MS) })).status, 200, `${role} /healthz`);
      const started = Date.now();
      const metrics = await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(SCRAPE_MS) });
      assert.equal(metrics.status, 200, `${role} /metrics`);
      assert.match(await metrics.text(), /^troupe_process_cpu_seconds_total/m);
      assert.ok(Date.now() - started < SCRAPE_MS, `${role} /metrics answered in ${Date.now() - started} ms`);
    }
    const web = await fetch(`${c.url('web')}/readyz`, { signal: AbortSignal.timeout(SCRAPE_MS) });
    assert.equal(web.status, 503);
    assert.equal(((await web.json()) as { error: { code: string } }).error.code, 'not_ready');
    assert.equal((await fetch(`${c.url('router')}/readyz`, { signal: AbortSignal.timeout(SCRAPE_MS) })).status, 200);
  });

  it('a worker started while Redis is down is live and scrapable while its actors wait for Redis', async () => {
    const child = spawn(process.execPath, [join(__dirname, '../../src/main.js'), 'worker'], { env: { ...c.env, METRICS_PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: string[] = [];
    child.stdout!.on('data', (d: Buffer) => lines.push(...d.toString().split('\n').filter(Boolean)));
    const exited = new Promise((r) => child.once('exit', r));
    try {
      let listening: string | undefined;
      for (let i = 0; i < 200 && !(listening = lines.find((l) => l.includes('"msg":"metrics listening"'))); i++) await new Promise((r) => setTimeout(r, 100));
      assert.ok(listening, `no metrics listening line:\n${lines.slice(-10).join('\n')}`);
      const base = `http://127.0.0.1:${(JSON.parse(listening) as { port: number }).port}`;
      assert.equal((await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(SCRAPE_MS) })).status, 200);
      assert.equal((await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(SCRAPE_MS) })).status, 200);
      assert.ok(!lines.some((l) => l.includes('"msg":"worker started"')), 'its actors are still waiting for Redis');
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  });

  it(`every role exits 0 within ${PROMPT_EXIT_MS / 1000} s of SIGTERM, not after its shutdown timeout`, async () => {
    const started = Date.now();
    const exits = ROLES.map((role) => {
      const { child } = c.procs.get(role)!;
      child.kill('SIGTERM');
      return new Promise<{ role: string; code: number | null; ms: number }>((resolve) => {
        const timer = setTimeout(() => child.kill('SIGKILL'), PROMPT_EXIT_MS);
        child.once('exit', (code) => (clearTimeout(timer), resolve({ role, code, ms: Date.now() - started })));
      });
    });
    const results = await Promise.all(exits);
    for (const r of results) assert.ok(r.code === 0 && r.ms < PROMPT_EXIT_MS, `${r.role} exited ${r.code === null ? 'only when killed' : `with code ${r.code}`} after ${r.ms} ms:\n${c.procs.get(r.role)!.lines.slice(-8).join('\n')}`);
  });
});
