import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Agent } from '../../sdks/js/src/index.js';
import { runLocally } from '../../sdks/js/src/harness.js';

const ROOT = join(__dirname, '../../..');

/** The reference's "every ctx method in one agent" blocks, as a reader copies them. */
function referenceAgents(): { js: string; python: string } {
  const doc = readFileSync(join(ROOT, 'docs/code-agents.md'), 'utf8');
  const from = doc.indexOf('Every `ctx` method in one agent');
  assert.ok(from > 0, 'docs/code-agents.md has the reference agents');
  const rest = doc.slice(from);
  const block = (lang: string) => /```(\w+)\n([\s\S]*?)```/g.exec(rest.slice(rest.indexOf('```' + lang + '\n')))?.[2] ?? '';
  return { js: block('js'), python: block('python') };
}

/**
 * docs/code-agents.md says its reference agents run as written with the local harnesses: run them, so the reference
 * cannot drift from the ctx the SDKs and the sandbox give (both were also deployed by hand against `npm start`).
 */
describe('docs/code-agents.md: the reference agents run with the SDK harnesses', () => {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-doc-agents-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const script = { turns: [{ tool_calls: [{ name: 'lookup_account', arguments: { question: 'x' } }] }, { text: 'plan {{lookup_account.plan}}' }] };
  const journal = ['emit emit', 'tool lookup_account', 'tool service_status', 'model default', 'tool lookup_account', 'model demo'];

  it('JavaScript: every ctx method, in the order the reference calls them', async () => {
    writeFileSync(join(dir, 'agent.js'), referenceAgents().js);
    const { agent } = require(join(dir, 'agent.js')) as { agent: Agent };
    const tools = { lookup_account: () => ({ plan: 'Team' }), service_status: () => ({ status: 'ok' }) };
    const out = await runLocally(agent, { input: 'hi', metadata: { user: 'ada' }, transcript: [{ role: 'user', text: 'a' }, { role: 'assistant', text: 'b' }], script, tools });
    assert.equal(out.answer, 'plan Team');
    assert.deepEqual(out.emits, ['asked by ada, turn 2']);
    assert.deepEqual(out.journal.map((e) => `${e.kind} ${e.name}`), journal);
  });

  it('Python: every ctx method, in the order the reference calls them', () => {
    writeFileSync(join(dir, 'agent.py'), referenceAgents().python);
    const check = `
import importlib.util, json, sys
sys.path.insert(0, ${JSON.stringify(join(ROOT, 'sdks/python'))})
from troupe_agent.harness import run_locally
spec = importlib.util.spec_from_file_location("agent", ${JSON.stringify(join(dir, 'agent.py'))})
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
tools = {"lookup_account": lambda a: {"plan": "Team"}, "service_status": lambda a: {"status": "ok"}}
out = run_locally(m.agent["run"], "hi", json.loads(${JSON.stringify(JSON.stringify(script))}), tools=tools, metadata={"user": "ada"}, transcript=[{"role": "user", "text": "a"}, {"role": "assistant", "text": "b"}])
print(json.dumps({"answer": out["answer"], "emits": out["emits"], "journal": ["%s %s" % (e["kind"], e["name"]) for e in out["journal"]]}))
`;
    const r = spawnSync('python3', ['-B', '-c', check], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.error, undefined, `python3 could not run: ${String(r.error)}`);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { answer: 'plan Team', emits: ['asked by ada, turn 2'], journal });
  });
});
