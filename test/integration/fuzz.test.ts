import assert from 'node:assert/strict';
import { spawnSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
  requests: number;
  operations: number;
  serverErrors: number;
  violations: number;
  output: string;
}

/** Runs `st run` and reads its NDJSON event stream for the figures. */
function runSchemathesis(schemaUrl: string, config: string, reportDir: string, maxExamples: number, maxTime: number): Promise<Report> {
  const args = ['--config-file', config, 'run', schemaUrl, '--checks', 'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance', '--max-examples', String(maxExamples), '--max-time', String(maxTime), '--phases', 'examples,coverage,fuzzing', '--workers', '2', '--seed', '1', '--no-color', '--request-timeout', '20', '--report', 'ndjson', '--report-ndjson-path', join(reportDir, 'events.ndjson'), '--suppress-health-check', 'all'];
  return new Promise((res) => {
    const child = spawn(ST, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('exit', () => {
      const report: Report = { requests: 0, operations: 0, serverErrors: 0, violations: 0, output };
      const text = existsSync(join(reportDir, 'events.ndjson')) ? readFileSync(join(reportDir, 'events.ndjson'), 'utf8') : '';
      for (const line of text.split('\n').filter(Boolean)) {
        const ev = JSON.parse(line) as Record<string, any>;
        const results = ev.ScenarioFinished?.recorder ?? null;
        if (!results) continue;
        for (const interactions of Object.values(results.interactions ?? {}) as { response?: { status_code: number } | null }[]) {
          report.requests++;
          if ((interactions.response?.status_code ?? 0) >= 500) report.serverErrors++;
        }
        for (const checks of Object.values(results.checks ?? {}) as { name: string; status: string }[][]) {
          for (const c of checks) if (c.status === 'FAILURE' && c.name !== 'not_a_server_error') report.violations++;
        }
      }
      report.operations = (output.match(/^\s*(GET|POST|PUT|DELETE|PATCH) /gm) ?? []).length;
      res(report);
    });
  });
}

describe('fuzzing: schemathesis against /v1/openapi.json', function () {
  this.timeout(900_000);
  let h: Harness;
  let dir: string;
  before(async function () {
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
        '',
      ].join('\n'),
    );
    const full = process.env.TROUPE_FUZZ_SCALE === 'full';
    const r = await runSchemathesis(`${h.baseUrl}/v1/openapi.json`, config, dir, full ? 100 : 15, full ? 600 : 150);
    process.stdout.write(`      schemathesis: ${r.requests} requests, ${r.serverErrors} 5xx, ${r.violations} responses outside the document\n`);
    // Kept for reading after the run (the figures in docs/reliability.md come from here).
    mkdirSync(KEEP, { recursive: true });
    writeFileSync(join(KEEP, 'output.txt'), r.output);
    if (existsSync(join(dir, 'events.ndjson'))) copyFileSync(join(dir, 'events.ndjson'), join(KEEP, 'events.ndjson'));
    assert.ok(r.requests > 100, `schemathesis ran: ${r.output.slice(-3000)}`);
    assert.equal(r.serverErrors, 0, r.output.slice(-6000));
    assert.equal(r.violations, 0, r.output.slice(-6000));
  });
});
