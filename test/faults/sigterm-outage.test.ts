import assert from 'node:assert/strict';
import { Cluster } from './support/cluster.js';

/** What an operator expects of a SIGTERM with Redis gone: nothing can be handed back, so the process exits at once. */
const PROMPT_EXIT_MS = 8000;
const ROLES = ['web', 'router', 'worker', 'webhooks'] as const;

describe('fault: SIGTERM while Redis is down', function () {
  let c: Cluster;
  // The production shutdown timeout: a process that waits on the dead Redis sits out all of it (exit code 1).
  before(async () => (c = await Cluster.start({ env: { TROUPE_SHUTDOWN_TIMEOUT_MS: '25000', TROUPE_DRAIN_DELAY_MS: '0' } })));
  after(async () => c?.close());

  it(`every role exits 0 within ${PROMPT_EXIT_MS / 1000} s, not after its shutdown timeout`, async () => {
    for (const role of ROLES) await c.start(role, role);
    await c.stopRedis();
    // Every process has noticed: its connections are between reconnect attempts (where ioredis never ends a close).
    for (const role of ROLES) {
      const p = c.procs.get(role)!;
      for (let i = 0; i < 100 && !p.lines.some((l) => l.includes('redis connection error')); i++) await new Promise((r) => setTimeout(r, 100));
      assert.ok(p.lines.some((l) => l.includes('redis connection error')), `${role} saw Redis go`);
    }
    await new Promise((r) => setTimeout(r, 1500));
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
