import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { MongoClient } from 'mongodb';
import { requiredEnv, uniqueName } from '../support/harness.js';

const run = promisify(execFile);
const CLI = join(__dirname, '../../src/admin/cli.js');

describe('admin command', () => {
  const db = uniqueName('troupe_admin');
  const env = { ...process.env, MONGODB_URL: requiredEnv('MONGODB_URL'), TROUPE_MONGODB_DB: db };
  const admin = async (...args: string[]) => JSON.parse((await run(process.execPath, [CLI, ...args], { env })).stdout);

  after(async () => {
    const c = new MongoClient(env.MONGODB_URL, { directConnection: true });
    await c.db(db).dropDatabase();
    await c.close();
  });

  it('creates an org and keys, stores only hashes, lists by prefix and revokes', async () => {
    const org = await admin('org', 'create', 'acme');
    assert.equal(org.name, 'acme');
    const api = await admin('key', 'create', '--org', 'acme', '--kind', 'api', '--name', 'ci');
    const routing = await admin('key', 'create', '--org', 'acme', '--kind', 'routing');
    assert.match(api.key, /^tr_sk_/);
    assert.match(routing.key, /^tr_rk_/);
    const c = new MongoClient(env.MONGODB_URL, { directConnection: true });
    try {
      const stored = await c.db(db).collection('api_keys').find({}).toArray();
      assert.ok(!JSON.stringify(stored).includes(api.key), 'the key itself is never stored');
      assert.ok(stored.some((k) => k.hash === createHash('sha256').update(api.key).digest('hex')));
    } finally {
      await c.close();
    }
    const listed = await admin('key', 'list', '--org', 'acme', '--prefix', 'tr_sk_');
    assert.deepEqual(listed.map((k: { id: string }) => k.id), [api.id]);
    assert.ok(!JSON.stringify(listed).includes(api.key));
    const revoked = await admin('key', 'revoke', '--org', 'acme', api.prefix);
    assert.ok(revoked.revoked_at);
  });

  it('exits 2 with usage on a bad command', async () => {
    await assert.rejects(run(process.execPath, [CLI, 'key', 'create', '--org', 'acme', '--kind', 'nope'], { env }), (e: { code: number; stderr: string }) => e.code === 2 && /--kind must be api or routing/.test(e.stderr) && /^usage: troupe-admin/m.test(e.stderr));
    // Was exit 1, "unexpected failure", with no usage.
    await assert.rejects(run(process.execPath, [CLI, 'org', 'list', '--bogus'], { env }), (e: { code: number; stderr: string }) => e.code === 2 && /Unknown option '--bogus'/.test(e.stderr) && /^usage: troupe-admin/m.test(e.stderr));
    const help = await run(process.execPath, [CLI, '--help'], { env });
    assert.match(help.stdout, /^usage: troupe-admin/);
  });

  it('exits 3 with one line, no usage, when what the command names is not there or already is', async () => {
    // A well-formed command about a missing org or key is not a usage mistake: scripts tell the two apart by the code.
    await admin('org', 'create', 'present');
    const cases: [string[], string][] = [
      [['key', 'list', '--org', 'absent'], 'troupe-admin: no org named "absent"'],
      [['org', 'limits', 'absent'], 'troupe-admin: no org named "absent"'],
      [['key', 'revoke', '--org', 'present', 'tr_sk_nope'], 'troupe-admin: no single key matches "tr_sk_nope"'],
      [['org', 'create', 'present'], 'troupe-admin: org "present" already exists'],
    ];
    for (const [args, line] of cases) {
      await assert.rejects(run(process.execPath, [CLI, ...args], { env }), (e: { code: number; stdout: string; stderr: string }) => {
        assert.deepEqual([e.code, e.stderr, e.stdout], [3, `${line}\n`, ''], args.join(' '));
        return true;
      });
    }
  });
});
