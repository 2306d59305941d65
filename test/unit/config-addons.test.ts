import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, mongodbUrlVar } from '../../src/lib/config/config.js';

const MONGO = 'mongodb://127.0.0.1:27017/troupe';

/**
 * The variables a Heroku-style platform's add-ons set (MONGODB_URI, REDIS_TLS_URL) and the TLS settings of
 * a Redis whose certificate is self-signed (docs/deploy.md).
 */
describe('config: add-on variables and Redis TLS', () => {
  let dir: string;
  let caFile: string;
  let caPem: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'troupe-config-ca-'));
    caFile = join(dir, 'ca.crt');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'ca.key'), '-out', caFile, '-days', '1', '-subj', '/CN=troupe-test-ca'], { stdio: 'ignore' });
    caPem = readFileSync(caFile, 'utf8');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  describe('MongoDB: MONGODB_URL, else MONGODB_URI', () => {
    it('reads MONGODB_URI when MONGODB_URL is unset, and names it', () => {
      const c = loadConfig({ MONGODB_URI: 'mongodb://u:p@db.example.net:27017/heroku_abc', REDIS_URL: 'redis://127.0.0.1:6379' });
      assert.equal(c.mongodbUrl, 'mongodb://u:p@db.example.net:27017/heroku_abc');
      assert.equal(c.mongodbUrlVar, 'MONGODB_URI');
      assert.equal(c.mongodbDb, 'heroku_abc');
    });

    it('takes MONGODB_URL when both are set and equal', () => {
      assert.equal(mongodbUrlVar({ MONGODB_URL: MONGO, MONGODB_URI: MONGO }), 'MONGODB_URL');
      assert.equal(mongodbUrlVar({ MONGODB_URL: MONGO }), 'MONGODB_URL');
      assert.equal(mongodbUrlVar({}), 'MONGODB_URL', 'the variable a missing URL is reported under');
    });

    it('refuses both set to different values', () => {
      assert.throws(() => loadConfig({ MONGODB_URL: MONGO, MONGODB_URI: 'mongodb://other:27017/x', REDIS_URL: 'redis://127.0.0.1:6379' }), /^ConfigError: MONGODB_URL and MONGODB_URI are both set and differ; set only one/);
    });

    it('validates MONGODB_URI as it does MONGODB_URL, naming it', () => {
      assert.throws(() => loadConfig({ MONGODB_URI: 'postgres://x', REDIS_URL: 'redis://127.0.0.1:6379' }), /MONGODB_URI must use mongodb/);
    });
  });

  describe('Redis: REDIS_TLS_URL before REDIS_URL', () => {
    it('prefers REDIS_TLS_URL when both are set (Heroku Redis sets both)', () => {
      const c = loadConfig({ MONGODB_URL: MONGO, REDIS_URL: 'redis://h:p@ec2.example.net:6379', REDIS_TLS_URL: 'rediss://h:p@ec2.example.net:6380' });
      assert.equal(c.redisUrl, 'rediss://h:p@ec2.example.net:6380');
      assert.equal(c.redisUrlVar, 'REDIS_TLS_URL');
      assert.deepEqual(c.redisTls, { rejectUnauthorized: true, ca: null }, 'verification stays on unless told');
    });

    it('reads REDIS_TLS_URL alone, and refuses one without TLS', () => {
      assert.equal(loadConfig({ MONGODB_URL: MONGO, REDIS_TLS_URL: 'rediss://h:6380' }).redisUrlVar, 'REDIS_TLS_URL');
      assert.throws(() => loadConfig({ MONGODB_URL: MONGO, REDIS_TLS_URL: 'redis://h:6379' }), /REDIS_TLS_URL must use rediss:\/\/ or rediss-cluster:\/\//);
      assert.throws(() => loadConfig({ MONGODB_URL: MONGO, REDIS_TLS_URL: 'rediss://a:1,b:2' }), /^ConfigError: REDIS_TLS_URL lists several hosts/);
    });

    it('has no TLS settings for a plain URL, and refuses TLS settings beside one', () => {
      assert.equal(loadConfig({ MONGODB_URL: MONGO, REDIS_URL: 'redis://h:6379' }).redisTls, null);
      assert.throws(() => loadConfig({ MONGODB_URL: MONGO, REDIS_URL: 'redis://h:6379', REDIS_TLS_REJECT_UNAUTHORIZED: 'false' }), /REDIS_TLS_REJECT_UNAUTHORIZED is set but REDIS_URL does not use TLS \(rediss:\/\/\)/);
      assert.throws(() => loadConfig({ MONGODB_URL: MONGO, REDIS_URL: 'redis://h:6379', REDIS_TLS_CA: caFile }), /REDIS_TLS_CA is set but REDIS_URL does not use TLS/);
    });

    it('turns verification off with REDIS_TLS_REJECT_UNAUTHORIZED=false (or 0), and refuses other values', () => {
      for (const off of ['false', '0', 'no', 'FALSE']) {
        assert.deepEqual(loadConfig({ MONGODB_URL: MONGO, REDIS_URL: 'rediss://h:6380', REDIS_TLS_REJECT_UNAUTHORIZED: off }).redisTls, { rejectUnauthorized: false, ca: null }, off);
      }
      assert.deepEqual(loadConfig({ MONGODB_URL: MONGO, REDIS_URL: 'rediss://h:6380', REDIS_TLS_REJECT_UNAUTHORIZED: 'true' }).redisTls, { rejectUnauthorized: true, ca: null });
      assert.deepEqual(loadConfig({ MONGODB_URL: MONGO, REDIS_URL: 'rediss-cluster://a:1,b:2', REDIS_TLS_REJECT_UNAUTHORIZED: '0' }).redisTls, { rejectUnauthorized: false, ca: null }, 'a TLS cluster too');
      assert.throws(() => loadConfig({ MONGODB_URL: MONGO, REDIS_URL: 'rediss://h:6380', REDIS_TLS_REJECT_UNAUTHORIZED: 'off' }), /REDIS_TLS_REJECT_UNAUTHORIZED must be 1 or 0/);
    });

    it('reads REDIS_TLS_CA as a path or as PEM text (line breaks as \\n too)', () => {
      const env = { MONGODB_URL: MONGO, REDIS_URL: 'rediss://h:6380' };
      assert.deepEqual(loadConfig({ ...env, REDIS_TLS_CA: caFile }).redisTls, { rejectUnauthorized: true, ca: caPem });
      assert.equal(loadConfig({ ...env, REDIS_TLS_CA: caPem }).redisTls?.ca, caPem.trim());
      assert.equal(loadConfig({ ...env, REDIS_TLS_CA: caPem.trim().replace(/\n/g, '\\n') }).redisTls?.ca, caPem.trim());
    });

    it('refuses a CA it cannot read or parse, and a CA with verification off', () => {
      const env = { MONGODB_URL: MONGO, REDIS_URL: 'rediss://h:6380' };
      assert.throws(() => loadConfig({ ...env, REDIS_TLS_CA: join(dir, 'missing.pem') }), /REDIS_TLS_CA must be PEM text or the path of a PEM file; cannot read ".*missing\.pem" \(ENOENT\)/);
      assert.throws(() => loadConfig({ ...env, REDIS_TLS_CA: join(dir, 'ca.key') }), /REDIS_TLS_CA holds no PEM certificate/);
      assert.throws(() => loadConfig({ ...env, REDIS_TLS_CA: '-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----' }), /REDIS_TLS_CA holds no PEM certificate/);
      assert.throws(() => loadConfig({ ...env, REDIS_TLS_CA: caFile, REDIS_TLS_REJECT_UNAUTHORIZED: 'false' }), /REDIS_TLS_CA and REDIS_TLS_REJECT_UNAUTHORIZED=false are both set; set one/);
    });
  });
});
