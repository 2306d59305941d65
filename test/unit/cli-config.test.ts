import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readItems } from '../../clients/cli/commands/batch.js';
import { resolveConfig, saveProfile } from '../../clients/cli/config.js';
import { CliError, EXIT, exitCodeOf } from '../../clients/cli/exit-codes.js';
import { run } from '../../clients/cli/main.js';
import { DeployError } from '../../clients/typescript/src/deploy.js';
import { apiError, TroupeConnectionError } from '../../clients/typescript/src/errors.js';

/** The CLI's exit code for argv, with what it prints kept out of the test output. */
async function quietly(argv: string[]): Promise<{ code: number; stderr: string }> {
  const writes = [process.stdout.write, process.stderr.write];
  let stderr = '';
  process.stdout.write = (() => true) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string) => ((stderr += String(chunk)), true)) as typeof process.stderr.write;
  try {
    return { code: await run(['node', 'troupe', ...argv]), stderr };
  } finally {
    [process.stdout.write, process.stderr.write] = writes;
  }
}

const usageError = (pattern: RegExp) => (e: unknown) => e instanceof CliError && e.code === EXIT.usage && pattern.test(e.message);

describe('CLI configuration and exit codes', () => {
  let dir: string;
  const saved = { ...process.env };
  const cwd = process.cwd();
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'troupe-cfg-'));
    for (const k of ['TROUPE_BASE_URL', 'TROUPE_API_KEY', 'TROUPE_PROFILE', 'TROUPE_DATA_DIR']) delete process.env[k];
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

  it('takes npm start’s dev keys from TROUPE_DATA_DIR when it is set, and then from nowhere else', () => {
    mkdirSync(join(dir, 'repo/.data'), { recursive: true });
    mkdirSync(join(dir, 'elsewhere'));
    writeFileSync(join(dir, 'repo/.data/dev-keys.json'), JSON.stringify({ api: 'tr_sk_checkout', base_url: 'http://localhost:8080' }));
    writeFileSync(join(dir, 'elsewhere/dev-keys.json'), JSON.stringify({ api: 'tr_sk_datadir', base_url: 'http://localhost:9080' }));
    process.chdir(join(dir, 'repo'));
    process.env.TROUPE_DATA_DIR = join(dir, 'elsewhere');
    assert.deepEqual([resolveConfig({}).baseUrl, resolveConfig({}).apiKey, resolveConfig({}).source], ['http://localhost:9080', 'tr_sk_datadir', join(dir, 'elsewhere/dev-keys.json')]);
    process.env.TROUPE_DATA_DIR = join(dir, 'empty');
    assert.throws(() => resolveConfig({}), usageError(new RegExp(`no dev keys in ${join(dir, 'empty/dev-keys.json')} \\(TROUPE_DATA_DIR\\)`)), 'not the checkout’s keys, which belong to another stack');
  });

  it('refuses to run without a base URL and key, as a usage error', () => {
    process.chdir(dir);
    assert.throws(() => resolveConfig({}), (e: unknown) => e instanceof CliError && e.code === EXIT.usage && /No base URL configured/.test(e.message));
  });

  it('refuses a base URL that is not an http(s) URL, as a usage error naming where it came from', async () => {
    assert.throws(() => resolveConfig({ baseUrl: 'localhost:8080', apiKey: 'k' }), usageError(/--base-url "localhost:8080" is not an http\(s\) URL/));
    process.env.TROUPE_BASE_URL = 'ftp://example.com';
    assert.throws(() => resolveConfig({ apiKey: 'k' }), usageError(/TROUPE_BASE_URL "ftp:\/\/example.com" is not an http\(s\) URL/));
    delete process.env.TROUPE_BASE_URL;
    const login = await quietly(['login', '--base-url', 'notaurl', '--api-key', 'k']);
    assert.equal(login.code, EXIT.usage);
    assert.match(login.stderr, /--base-url "notaurl" is not an http\(s\) URL/);
    assert.equal(existsSync(process.env.TROUPE_CONFIG!), false, 'nothing saved');
  });

  it('exits 2 when no command is given or an option is malformed, 0 for --help', async () => {
    assert.equal((await quietly([])).code, EXIT.usage);
    assert.equal((await quietly(['sessions'])).code, EXIT.usage);
    assert.equal((await quietly(['--help'])).code, EXIT.ok);
    assert.equal((await quietly(['help', 'send'])).code, EXIT.ok);
    assert.equal((await quietly(['tail', 'ses_x', '--after', 'abc'])).code, EXIT.usage, 'not read as "from the start"');
    process.env.TROUPE_BASE_URL = 'http://127.0.0.1:9';
    process.env.TROUPE_API_KEY = 'tr_sk_x';
    for (const limit of ['abc', '0', '500']) assert.equal((await quietly(['sessions', 'list', '--limit', limit])).code, EXIT.usage, `--limit ${limit} is refused before any request`);
  });

  it('refuses a batch file it cannot read, or a line that is not an object, as a usage error', () => {
    assert.throws(() => readItems(join(dir, 'missing.jsonl'), 'agt_1'), usageError(/cannot read .*missing\.jsonl: no such file/));
    assert.throws(() => readItems(dir, 'agt_1'), usageError(/is a directory/));
    const file = join(dir, 'items.jsonl');
    for (const line of ['5', 'null', '["a"]', '"text"']) {
      writeFileSync(file, `{"text":"ok"}\n${line}\n`);
      assert.throws(() => readItems(file, 'agt_1'), usageError(/items\.jsonl:2 is not a JSON object/), line);
    }
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
