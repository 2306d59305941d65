import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveConfig, saveProfile } from '../../clients/cli/config.js';
import { CliError, EXIT, exitCodeOf } from '../../clients/cli/exit-codes.js';
import { DeployError } from '../../clients/typescript/src/deploy.js';
import { apiError, TroupeConnectionError } from '../../clients/typescript/src/errors.js';

describe('CLI configuration and exit codes', () => {
  let dir: string;
  const saved = { ...process.env };
  const cwd = process.cwd();
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'troupe-cfg-'));
    for (const k of ['TROUPE_BASE_URL', 'TROUPE_API_KEY', 'TROUPE_PROFILE']) delete process.env[k];
    process.env.TROUPE_CONFIG = join(dir, 'config.json');
  });
  afterEach(() => {
    process.chdir(cwd);
    process.env = { ...saved };
    rmSync(dir, { recursive: true, force: true });
  });

  it('takes flags, then the environment, then the profile, then npm start’s dev keys', () => {
    mkdirSync(join(dir, 'repo/.data'), { recursive: true });
    mkdirSync(join(dir, 'repo/sub'));
    writeFileSync(join(dir, 'repo/.data/dev-keys.json'), JSON.stringify({ api: 'tr_sk_dev', routing: 'r', base_url: 'http://localhost:9999' }));
    process.chdir(join(dir, 'repo/sub'));
    assert.deepEqual([resolveConfig({}).baseUrl, resolveConfig({}).apiKey], ['http://localhost:9999', 'tr_sk_dev'], 'dev keys found from a subfolder');
    saveProfile('default', 'http://profile', 'tr_sk_profile');
    assert.equal(resolveConfig({}).apiKey, 'tr_sk_profile');
    process.env.TROUPE_API_KEY = 'tr_sk_env';
    assert.deepEqual([resolveConfig({}).baseUrl, resolveConfig({}).apiKey], ['http://profile', 'tr_sk_env']);
    assert.equal(resolveConfig({ apiKey: 'tr_sk_flag' }).apiKey, 'tr_sk_flag');
    assert.throws(() => resolveConfig({ profile: 'missing' }), (e: unknown) => e instanceof CliError && e.code === EXIT.usage);
  });

  it('refuses to run without a base URL and key, as a usage error', () => {
    process.chdir(dir);
    assert.throws(() => resolveConfig({}), (e: unknown) => e instanceof CliError && e.code === EXIT.usage && /No base URL configured/.test(e.message));
  });

  it('maps each kind of failure to its documented exit code', () => {
    assert.equal(exitCodeOf(apiError(404, { error: { type: 'not_found_error', code: 'x', message: 'm' } }, null)), EXIT.refused);
    assert.equal(exitCodeOf(apiError(503, 'down', null)), EXIT.unavailable);
    assert.equal(exitCodeOf(new TroupeConnectionError('refused')), EXIT.unavailable);
    assert.equal(exitCodeOf(new DeployError('did not verify', 'snp_1')), EXIT.failed);
    assert.equal(exitCodeOf(new CliError('late', EXIT.timeout)), 6);
    assert.equal(exitCodeOf(new TypeError('bug')), EXIT.internal);
  });
});
