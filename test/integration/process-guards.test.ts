import assert from 'node:assert/strict';
import { join } from 'node:path';
import { EXIT_AFTER_UNCAUGHT } from '../../src/roles/serve.js';
import { startHarness, type Harness } from '../support/harness.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';

const CRASH_ENTRY = join(__dirname, '../support/crash-process.js');

/**
 * No input ends a process, and a throw nothing handled is dealt with as
 * docs/decisions.md "Process guards" says: in a real child process started
 * like `npm start` (web and router in one process, so a crash of either is a
 * crash of both).
 */
describe('process guards: web and router in one real process', function () {
  this.timeout(60_000);
  let h: Harness;
  const procs: RoleProcess[] = [];

  before(async () => {
    h = await startHarness({ roles: [], env: { LOG_LEVEL: 'warn' } });
  });
  after(async () => {
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.kill('SIGKILL');
    await Promise.all(procs.map((p) => Promise.race([p.exited, new Promise((r) => setTimeout(r, 5000))])));
    await h?.close();
  });

  async function start(crash: 'rejection' | 'exception'): Promise<RoleProcess> {
    const p = await startRoleProcess(['web', 'router'], { ...h.env, PORT: '0', ROUTER_PORT: '0', LOG_LEVEL: 'info', TROUPE_TEST_CRASH: crash, TROUPE_SHUTDOWN_TIMEOUT_MS: '2000' }, { entry: CRASH_ENTRY });
    procs.push(p);
    await p.waitForLog('crash hook ready');
    return p;
  }
  const ready = (port: number) => fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status);

  it('answers a malformed percent-encoding in a router id with a 400 in the vendor envelope and keeps both ingresses up', async () => {
    const p = await start('rejection');
    const router = `http://127.0.0.1:${p.ports.router}`;
    const messages = await fetch(`${router}/%ZZ/messages`, { method: 'POST', body: '{}', headers: { 'Content-Type': 'application/json' } });
    assert.equal(messages.status, 400);
    const anthropic = (await messages.json()) as { type: string; error: { type: string; code: string } };
    assert.equal(anthropic.type, 'error');
    assert.equal(anthropic.error.code, 'malformed_path');
    const chat = await fetch(`${router}/%E0%A4%A/chat/completions`, { method: 'POST', body: '{}' });
    assert.equal(chat.status, 400);
    assert.equal(((await chat.json()) as { error: { code: string; param: string } }).error.code, 'malformed_path');
    const models = await fetch(`${router}/%ZZ/models`, { headers: { Authorization: `Bearer ${h.routingKey}` } });
    assert.equal(models.status, 400);
    assert.equal(((await models.json()) as { error: { code: string } }).error.code, 'malformed_path');
    assert.equal(await ready(p.ports.router!), 200);
    assert.equal(await ready(p.ports.web!), 200);
    assert.equal(p.child.exitCode, null);
  });

  it('logs and counts an unhandled rejection and keeps serving', async () => {
    const p = procs[0] ?? (await start('rejection'));
    const logged = p.waitForLog('unhandled promise rejection; still serving', 10_000);
    p.kill('SIGUSR2');
    const line = await logged;
    assert.match(JSON.stringify(line.err), /deliberate unhandled rejection/);
    assert.equal(await ready(p.ports.web!), 200);
    assert.equal(await ready(p.ports.router!), 200);
    const metrics = await (await fetch(`http://127.0.0.1:${p.ports.router}/metrics`)).text();
    assert.match(metrics, /troupe_uncaught_errors_total\{[^}]*kind="unhandled_rejection"[^}]*\} 1/);
    assert.equal(p.child.exitCode, null);
  });

  it('drains and exits non-zero on an uncaught exception, so a supervisor restarts a clean process', async () => {
    const p = await start('exception');
    const logged = p.waitForLog('uncaught exception; draining and exiting', 10_000);
    p.kill('SIGUSR2');
    const line = await logged;
    assert.match(JSON.stringify(line.err), /deliberate uncaught exception/);
    const code = await Promise.race([p.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 15_000))]);
    assert.equal(code, EXIT_AFTER_UNCAUGHT);
    // It drained (the ordered shutdown ran) rather than dying mid-way.
    assert.ok(p.lines.some((l) => l.includes('"msg":"shutting down"') && l.includes('uncaughtException')), p.lines.slice(-20).join('\n'));
  });
});
