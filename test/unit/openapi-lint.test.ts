import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { openApiDocuments, writeOpenApiDocuments } from '../../clients/typescript/codegen/openapi-files.js';

const run = promisify(execFile);
const ROOT = resolve(__dirname, '../../..');
const REDOCLY = join(ROOT, 'node_modules/@redocly/cli/bin/cli.js');

type Op = { security?: unknown[]; responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }> };

function operations(doc: Record<string, unknown>): [string, Op][] {
  return Object.entries(doc.paths as Record<string, Record<string, Op>>).flatMap(([path, ops]) => Object.entries(ops).map(([m, op]) => [`${m.toUpperCase()} ${path}`, op] as [string, Op]));
}

/** A schema that says something about the body, not just "an object". */
const typed = (s: Record<string, unknown>) => Boolean(s.$ref || s.properties || s.items || s.anyOf || s.oneOf || (s.type && s.type !== 'object'));

describe('OpenAPI documents', function () {
  this.timeout(120_000);
  const { api: base, routing } = openApiDocuments();

  it('are lint-clean under @redocly/cli with the repo’s redocly.yaml, as `npm run lint:openapi` runs it: no errors, no warnings', async () => {
    // What README's command does: write the documents where redocly.yaml's `apis` name them, then `redocly lint` with no argument.
    writeOpenApiDocuments();
    // Offline and quiet: no telemetry, no update check.
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', CI: 'true' };
    const out = await run(process.execPath, [REDOCLY, 'lint', '--format=json'], { env, cwd: ROOT, maxBuffer: 16 * 1024 * 1024 }).catch((e: { stdout?: string; stderr?: string; code?: number }) => e);
    // One JSON report per file, back to back.
    const reports = String(out.stdout).replace(/\}\s*\{/g, '}\u0000{').split('\u0000').map((t) => JSON.parse(t) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; message: string; location: { pointer: string }[] }[] });
    assert.equal(reports.length, 2, String(out.stderr));
    const problems = reports.flatMap((r) => r.problems.map((p) => `${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`));
    assert.deepEqual(problems, []);
    for (const r of reports) assert.deepEqual([r.totals.errors, r.totals.warnings], [0, 0]);
  });

  it('type every success response and list error responses; the stream is text/event-stream', () => {
    for (const doc of [base, routing]) {
      for (const [name, op] of operations(doc)) {
        const [status, ok] = Object.entries(op.responses).find(([k]) => /^2/.test(k))!;
        if (status !== '204') {
          assert.ok(ok.content && Object.keys(ok.content).length, `${name} has a success body`);
          for (const [type, c] of Object.entries(ok.content)) assert.ok(typed(c.schema), `${name} ${type} is typed`);
        }
        assert.ok(op.responses.default, `${name} documents its error shape`);
        assert.ok(Array.isArray(op.security), `${name} declares its security, even when open`);
        if (op.security!.length) assert.ok(op.responses['401'], `${name} lists 401`);
        if (op.security!.some((s) => 'bearer' in (s as object))) assert.ok(op.responses['429'], `${name} lists 429: it is rate limited`);
      }
    }
    const stream = (base.paths as Record<string, Record<string, Op>>)['/v1/sessions/{session_id}/stream'].get;
    assert.deepEqual(Object.keys(stream.responses['200'].content!), ['text/event-stream']);
    const msgs = (routing.paths as Record<string, Record<string, Op>>)['/v1/messages'].post;
    assert.ok(msgs.responses['200'].content!['text/event-stream']);
    assert.equal((msgs.responses['400'].content!['application/json'].schema.properties as Record<string, { const?: string }>).type.const, 'error', 'Anthropic envelope on /v1/messages');
  });
});
