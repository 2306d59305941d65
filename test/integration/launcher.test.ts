import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { startLocalServices, type LocalServices } from '../../infra/services/local-services.js';
import { isAlive } from '../../infra/services/process.js';
import { startHarness, type Harness } from '../support/harness.js';

/**
 * These tests start their own Redis and MongoDB-wire server with the launcher,
 * so they can stop them without disturbing the shared test services.
 */
describe('local services launcher and readiness', function () {
  this.timeout(120_000);
  let services: LocalServices;
  let h: Harness;

  before(async () => {
    services = await startLocalServices({ log: () => undefined });
    h = await startHarness({ roles: ['web', 'router'], env: { MONGODB_URL: services.mongodbUrl, REDIS_URL: services.redisUrl } });
  });
  after(async () => {
    await h?.close().catch(() => undefined);
    await services?.stop();
  });

  it('starts both servers on free ports', async () => {
    assert.equal(services.processes.length, 2);
    for (const p of services.processes) assert.ok(isAlive(p.pid), `${p.name} runs`);
    assert.notEqual(new URL(services.redisUrl).port, new URL(services.mongodbUrl).port);
    assert.equal((await fetch(`${h.baseUrl}/readyz`)).status, 200);
  });

  it('reports Redis down quickly and clearly', async () => {
    const redis = services.processes.find((p) => p.name === 'redis-server')!;
    await redis.stop();
    const started = Date.now();
    const res = await fetch(`${h.baseUrl}/readyz`);
    assert.equal(res.status, 503);
    const body = (await res.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'not_ready');
    assert.match(body.error.message, /redis/);
    assert.doesNotMatch(body.error.message, /mongodb:/);
    assert.ok(Date.now() - started < 3000, 'readiness answers within the probe timeout');
  });

  it('reports Mongo down quickly and clearly', async () => {
    const mongo = services.processes.find((p) => p.name !== 'redis-server')!;
    await mongo.stop();
    const started = Date.now();
    const res = await fetch(`${h.baseUrl}/readyz`);
    assert.equal(res.status, 503);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /mongodb: /);
    assert.ok(Date.now() - started < 3000, 'readiness answers within the probe timeout');
  });

  it('stop() leaves no process and no data directory behind', async () => {
    const pids = services.processes.map((p) => p.pid);
    await h.running.close();
    await services.stop();
    await services.stop();
    for (const pid of pids) assert.equal(isAlive(pid), false, `pid ${pid} is gone`);
    assert.ok(!services.processes.some((p) => existsSync(`/proc/${p.pid}`)));
  });
});
