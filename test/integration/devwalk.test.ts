import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TroupeClient } from '../../clients/typescript/src/client.js';
import { scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';

const ROOT = join(__dirname, '../../..');
const CLI = join(ROOT, 'dist/clients/cli/main.js');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `troupe …` as a child process, as a person or a script runs it. */
function troupe(args: string[], env: Record<string, string>, cwd: string, timeoutMs = 40_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env: { PATH: process.env.PATH ?? '', HOME: cwd, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`troupe ${args.join(' ')} did not exit within ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}

/**
 * What a developer meets walking the README with the CLI and the console, beyond cli.test.ts and console.test.ts:
 * a tail of a session that has had several messages, a tail into a pipe that closes, a metadata filter whose
 * matches are older than the newest 1,000 sessions, a deploy of a folder whose troupe.json is broken, and a tool
 * result form for a schema made of `$ref`s.
 */
describe('developer walk: the CLI and the console on a session with history, an org with many sessions, a broken folder', function () {
  this.timeout(120_000);
  let h: Harness;
  let dir: string;
  let env: Record<string, string>;
  let client: TroupeClient;
  const run = (args: string[]) => troupe(args, env, dir);
  before(async () => {
    h = await startHarness({ env: { TROUPE_SESSION_SHARDS: '4' } });
    client = new TroupeClient({ baseUrl: h.baseUrl, apiKey: h.apiKey });
    dir = mkdtempSync(join(tmpdir(), 'troupe-devwalk-'));
    env = { TROUPE_BASE_URL: h.baseUrl, TROUPE_API_KEY: h.apiKey, TROUPE_CONFIG: join(dir, 'config.json') };
  });
  after(async () => {
    await h?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('tail --until-idle on a session that has answered twice prints both turns and exits, not at the first idle', async () => {
    const { agentId } = await scriptedAgent(h, [{ text: 'hello back' }]);
    const s = await client.sessions.create(agentId);
    for (const text of ['first', 'second']) assert.equal((await client.sessions.sync(s.id, text, { timeoutMs: 20_000 })).status, 'completed');
    const tailed = await run(['tail', s.id, '--json', '--until-idle']);
    assert.equal(tailed.code, 0, tailed.stderr);
    const printed = tailed.stdout.trim().split('\n').map((l) => JSON.parse(l) as { sequence_number: number });
    assert.deepEqual(printed, (await client.sessions.events(s.id, { limit: 100 })).events, 'the whole ledger, through the second idle');
  });

  it('tail into a pipe that closes (| head) stops quietly with exit 0, not a stack trace', async () => {
    const { agentId } = await scriptedAgent(h, [{ text: 'hello back' }]);
    const s = await client.sessions.create(agentId);
    assert.equal((await client.sessions.sync(s.id, 'first', { timeoutMs: 20_000 })).status, 'completed');
    const child = spawn(process.execPath, [CLI, 'tail', s.id], { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: dir, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    // The reader takes the first lines and goes away, as `head` does; the next event tail writes meets a closed pipe.
    await new Promise((resolve) => child.stdout.once('data', resolve));
    child.stdout.destroy();
    assert.equal((await client.sessions.sync(s.id, 'second', { timeoutMs: 20_000 })).status, 'completed');
    const code = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 20_000))]);
    if (code === 'still running') child.kill('SIGKILL');
    assert.equal(code, 0, stderr);
    assert.equal(stderr, '');
  });

  it('deploy of a folder whose troupe.json is not JSON is a usage mistake (exit 2), said in one line', async () => {
    const folder = join(dir, 'broken-agent');
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'troupe.json'), '{"name": "broken",');
    const r = await run(['deploy', folder]);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, /troupe\.json is not valid JSON/);
    assert.equal(r.stdout, '');
  });
});
