import assert from 'node:assert/strict';
import { spawnSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { json } from '../support/wait.js';

const VERSION = '4.32.5';
const VENV = resolve(__dirname, '../../../.data/schemathesis');
const ST = join(VENV, 'bin', 'st');
const KEEP = resolve(__dirname, '../../../.data/fuzz');

/** schemathesis from PyPI in a venv under .data/, installed on first use; null (with the reason) only if pip cannot. */
function ensureSchemathesis(): { ok: true } | { ok: false; why: string } {
  const ready = () => existsSync(ST) && spawnSync(ST, ['--version'], { encoding: 'utf8' }).stdout.includes(VERSION);
  if (ready()) return { ok: true };
  const python = ['python3', 'python'].find((p) => spawnSync(p, ['--version']).status === 0);
  if (!python) return { ok: false, why: 'no python3 on PATH' };
  rmSync(VENV, { recursive: true, force: true });
  const venv = spawnSync(python, ['-m', 'venv', VENV], { encoding: 'utf8' });
  if (venv.status !== 0) return { ok: false, why: `python -m venv failed: ${venv.stderr}` };
  const pip = spawnSync(join(VENV, 'bin', 'pip'), ['install', '-q', `schemathesis==${VERSION}`], { encoding: 'utf8', timeout: 600_000 });
  if (pip.status !== 0) return { ok: false, why: `pip install schemathesis failed: ${pip.stderr.slice(-500)}` };
  return ready() ? { ok: true } : { ok: false, why: 'schemathesis installed but st does not run' };
}

interface Report {
  /** Test cases generated (each one request, or a few for the stateful checks). */
  requests: number;
  operations: number;
  serverErrors: number;
  violations: number;
  /** Operations schemathesis could not test at all (it could not build or send a request). */
  errors: number;
  output: string;
}

/** Runs `st run`; the figures come from its summary. */
function runSchemathesis(schemaUrl: string, config: string, reportDir: string, maxExamples: number, maxTime: number): Promise<Report> {
  // The archive upload takes raw gzip bytes under an upload token, which schemathesis cannot generate;
  // test/integration/hostile-input.test.ts and the source-snapshot tests send it hostile archives instead.
  const args = ['--config-file', config, 'run', schemaUrl, '--exclude-name', 'PUT /v1/source-snapshots/{source_snapshot_id}/upload', '--checks', 'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance', '--max-examples', String(maxExamples), '--max-time', String(maxTime), '--phases', 'examples,coverage,fuzzing', '--workers', '2', '--seed', '1', '--no-color', '--request-timeout', '20', '--report', 'ndjson', '--report-ndjson-path', join(reportDir, 'events.ndjson'), '--suppress-health-check', 'all'];
  return new Promise((res) => {
    // cwd is the run's temp dir: schemathesis keeps its cache (.schemathesis/) in the working directory.
    const child = spawn(ST, args, { cwd: reportDir, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('exit', () => {
      const summary = output.slice(output.lastIndexOf('SUMMARY'));
      const failures = summary.includes('Failures:') ? summary.slice(summary.indexOf('Failures:'), summary.search(/\n\s*\n(Errors|Warnings|Test cases|For more)/)) : '';
      const counted = [...failures.matchAll(/❌ (.+): (\d+)/g)].map((m) => [m[1], Number(m[2])] as const);
      const errors = summary.includes('Errors:') ? summary.slice(summary.indexOf('Errors:'), summary.search(/\n\s*\n(Warnings|Test cases|For more)/)) : '';
      res({
        requests: Number(/(\d+) generated/.exec(summary)?.[1] ?? 0),
        operations: Number(/Tested: (\d+)/.exec(summary)?.[1] ?? 0),
        serverErrors: counted.filter(([name]) => /server error/i.test(name)).reduce((n, [, k]) => n + k, 0),
        violations: counted.filter(([name]) => !/server error/i.test(name)).reduce((n, [, k]) => n + k, 0),
        errors: [...errors.matchAll(/🚫 .+: (\d+)/g)].reduce((n, m) => n + Number(m[1]), 0),
        output,
      });
    });
  });
}

describe('fuzzing: schemathesis against /v1/openapi.json', function () {
  this.timeout(900_000);
  let h: Harness;
  let dir: string;
  before(async function () {
    // The fuzzer exercises the HTTP layer, which both MongoDB-wire legs share: once per `npm test` is enough.
    if (Number(process.env.TROUPE_TEST_LEG ?? 1) > 1 && process.env.TROUPE_FUZZ_SCALE !== 'full') {
      process.stderr.write('      (fuzzing runs on the first leg of the matrix only)\n');
      this.skip();
    }
    const st = ensureSchemathesis();
    if (!st.ok) {
      process.stderr.write(`SKIPPED fuzzing: schemathesis could not be installed (${st.why})\n`);
      this.skip();
    }
    h = await startHarness({ env: { TROUPE_SESSION_SHARDS: '2' } });
    dir = mkdtempSync(join(tmpdir(), 'troupe-fuzz-'));
  });
  after(async () => {
    await h?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('answers no request with a 5xx and no response outside the document', async () => {
    // Real ids, so operations are reached past their 404s.
    const { agentId } = await scriptedAgent(h, [{ text: 'fuzzed' }]);
    const session = await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST' }), 201);
    const sent = await json<{ message: { id: string } }>(await h.api(`/v1/sessions/${session.id}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: 'hi' }] } }), 201);
    const form = new FormData();
    form.append('file', new Blob(['fuzz']), 'fuzz.txt');
    const file = await json<{ id: string }>(await h.api('/v1/files', { method: 'POST', body: form }), 201);
    const versionId = (await h.running.core.stores.agents.activeVersion((await h.running.core.stores.orgs.byName('default'))!._id, agentId))!._id;
    assert.equal((await h.api('/v1/credentials/FUZZ_KEY', { method: 'PUT', json: { value: 'sk-fuzz-key' } })).status, 200);
    const router = { candidates: [{ model: 'fuzz/m', provider: 'openai', upstream_model: 'm', base_url: 'http://127.0.0.1:9/v1', api_key_credential: 'FUZZ_KEY', reasoning_efforts: ['off'] }] };
    assert.equal((await h.api('/v1/routers/fuzz', { method: 'PUT', json: router })).status, 200);
    const batch = await json<{ batch_id: string }>(await h.api('/v1/session-batches', { method: 'POST', json: { items: [{ agent_id: agentId, message: { content: [{ type: 'text', text: 'b' }] } }] } }), 201);
    const config = join(dir, 'schemathesis.toml');
    writeFileSync(
      config,
      [
        `headers = { Authorization = "Bearer ${h.apiKey}" }`,
        '[parameters]',
        `"path.agent_id" = "${agentId}"`,
        `"path.session_id" = "${session.id}"`,
        `"path.message_id" = "${sent.message.id}"`,
        `"path.file_id" = "${file.id}"`,
        `"path.version_id" = "${versionId}"`,
        '"path.name" = "FUZZ_KEY"',
        '"path.router_id" = "fuzz"',
        `"path.batch_id" = "${batch.batch_id}"`,
        '',
      ].join('\n'),
    );
    const full = process.env.TROUPE_FUZZ_SCALE === 'full';
    const r = await runSchemathesis(`${h.baseUrl}/v1/openapi.json`, config, dir, full ? 100 : 10, full ? 900 : 90);
    process.stdout.write(`      schemathesis: ${r.operations} operations, ${r.requests} test cases, ${r.serverErrors} 5xx, ${r.violations} responses outside the document, ${r.errors} operations not testable\n`);
    // Kept for reading after the run (the figures in docs/reliability.md come from here).
    mkdirSync(KEEP, { recursive: true });
    writeFileSync(join(KEEP, 'output.txt'), r.output);
    if (existsSync(join(dir, 'events.ndjson'))) copyFileSync(join(dir, 'events.ndjson'), join(KEEP, 'events.ndjson'));
    assert.ok(r.requests > 100, `schemathesis ran: ${r.output.slice(-3000)}`);
    assert.equal(r.serverErrors, 0, r.output.slice(-6000));
    assert.equal(r.violations, 0, r.output.slice(-6000));
    assert.equal(r.errors, 0, r.output.slice(-6000));
  });
});
