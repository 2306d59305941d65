import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { freePort } from '../../infra/services/process.js';
import { dropTestData, requiredEnv, uniqueName } from '../support/harness.js';

const MAIN = join(__dirname, '../../src/main.js');
const CLI = join(__dirname, '../../src/admin/cli.js');

/** The environment of a process with only what a Heroku MongoDB add-on gives: MONGODB_URI, never MONGODB_URL. */
function addOnEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  delete env.MONGODB_URL;
  delete env.REDIS_TLS_URL;
  return env;
}

/**
 * MONGODB_URI, the variable Heroku's MongoDB add-ons set, read by the service and the admin command when
 * MONGODB_URL is unset; both set and different is refused by both (docs/deploy.md).
 */
describe("add-on variables: MONGODB_URI in place of MONGODB_URL", function () {
  this.timeout(60_000);
  const db = uniqueName('troupe_addon');
  const uri = () => {
    const u = new URL(requiredEnv('MONGODB_URL'));
    u.pathname = `/${db}`;
    return u.toString();
  };
  after(async () => dropTestData(requiredEnv('MONGODB_URL'), db, requiredEnv('REDIS_URL'), db));

  it('the admin command writes to the database MONGODB_URI names', async () => {
    const r = spawnSync(process.execPath, [CLI, 'org', 'create', 'addon-org'], { env: addOnEnv({ MONGODB_URI: uri() }), encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).name, 'addon-org');
    const c = new MongoClient(requiredEnv('MONGODB_URL'), { directConnection: true });
    try {
      assert.ok(await c.db(db).collection('orgs').findOne({ name: 'addon-org' }), 'in the database of the URI, not the default one');
    } finally {
      await c.close();
    }
  });

  it('the admin command refuses MONGODB_URL and MONGODB_URI that differ, as a usage mistake', () => {
    const r = spawnSync(process.execPath, [CLI, 'org', 'create', 'x'], { env: { ...addOnEnv({ MONGODB_URI: uri() }), MONGODB_URL: requiredEnv('MONGODB_URL') }, encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /^troupe-admin: MONGODB_URL and MONGODB_URI are both set and differ; set only one/);
  });

  it('a web process started with MONGODB_URI only is ready, and one given both, different, exits 1 with one line', async () => {
    const port = await freePort();
    const env = addOnEnv({ MONGODB_URI: uri(), REDIS_URL: requiredEnv('REDIS_URL'), TROUPE_REDIS_PREFIX: db, PORT: String(port), METRICS_PORT: '0', LOG_LEVEL: 'warn' });
    const child = spawn(process.execPath, [MAIN, 'web'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    let ready = false;
    const started = Date.now();
    try {
      while (!ready && child.exitCode === null && Date.now() - started < 30_000) {
        ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false);
        if (!ready) await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(ready, out.slice(-3000));
    } finally {
      if (child.exitCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    const both = spawnSync(process.execPath, [MAIN, 'web'], { env: { ...env, MONGODB_URL: requiredEnv('MONGODB_URL') }, encoding: 'utf8', timeout: 30_000 });
    assert.equal(both.status, 1);
    assert.equal(both.stderr.trimEnd(), 'troupe: MONGODB_URL and MONGODB_URI are both set and differ; set only one (MONGODB_URI is what Heroku add-ons set)');
  });
});
