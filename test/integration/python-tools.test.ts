import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configureSandbox, sandboxPolicy } from '../../src/lib/sandbox/capabilities.js';
import { runInSandbox } from '../../src/lib/sandbox/run.js';
import { errorOf, outcomes, outputOf, publishPythonAgent, startCase, type PyTool } from '../support/python-agent.js';
import { startHarness, type Harness } from '../support/harness.js';

/** Python custom tools through the real API: published from an archive, called by the scripted model, run by python3 in the sandbox. */
const TOOLS: Record<string, PyTool> = {
  add: {
    source: `
def handler(args, context):
    print("noise on stdout does not corrupt the result")
    return {"sum": args["a"] + args["b"], "pair": (1, 2), "nothing": None, "text": "caf\u00e9 \\udc80"}
`,
  },
  later: {
    source: `
import asyncio

async def handler(args, context):
    await asyncio.sleep(0.05)
    results = await asyncio.gather(*(asyncio.sleep(0.01, result=i) for i in range(3)))
    return {"awaited": results, "city": args["city"]}
`,
  },
  context: {
    source: `
import os, tempfile
import helper  # a sibling module of the tool

def handler(args, context):
    path = os.path.join(context.scratch_dir, "note.txt")
    with open(path, "w") as f:
        f.write("kept for this call")
    with open(path) as f:
        back = f.read()
    return {
        "secrets": context.secrets,
        "env": dict(os.environ),
        "scratch_is_tmp": tempfile.gettempdir() == context.scratch_dir,
        "storage_dir": context.storage_dir,
        "back": back,
        "helper": helper.shout("hi"),
        "repr_hides_secrets": "s3cret" not in repr(context),
    }
`,
  },
  keep: {
    source: `
import os

def handler(args, context):
    if context.storage_dir is None:
        return {"mounted": False}
    path = os.path.join(context.storage_dir, "notes", "py.txt")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(args["text"])
    return {"mounted": True, "env_matches": os.environ.get("TROUPE_STORAGE_DIR") == context.storage_dir}
`,
  },
  boom: { source: 'def handler(args, context):\n    raise ValueError("no such city: " + args["city"])\n' },
  not_json: { source: 'def handler(args, context):\n    return {"cities": {"Oslo", "Bergen"}}\n' },
  not_number: { source: 'def handler(args, context):\n    return float("nan")\n' },
  too_big: { source: 'def handler(args, context):\n    return "x" * 300_000\n' },
  busy: { source: 'def handler(args, context):\n    while True:\n        pass\n', timeout_seconds: 1 },
  idle: { source: 'import time\n\nasync def handler(args, context):\n    time.sleep(60)\n', timeout_seconds: 1 },
  hog: { source: 'def handler(args, context):\n    a = []\n    while True:\n        a.append(bytearray(16 * 1024 * 1024))\n' },
  no_handler: { source: 'HANDLER = None\n' },
  exits: { source: 'import sys\n\ndef handler(args, context):\n    sys.exit(3)\n' },
};

describe('Python custom tools', function () {
  this.timeout(60_000);
  let h: Harness;
  let agentId: string;

  before(async () => {
    h = await startHarness();
    await h.api('/v1/credentials/FROM_CREDENTIAL', { method: 'PUT', json: { value: 'cred-value' } });
    agentId = await publishPythonAgent(
      h,
      TOOLS,
      {
        basics: { add: { a: 2, b: 40 }, later: { city: 'Oslo' }, context: {} },
        errors: { boom: { city: 'Atlantis' }, not_json: {}, not_number: {}, no_handler: {}, exits: {} },
        limits: { too_big: {}, busy: {}, idle: {}, hog: {} },
        storage: { keep: { text: 'from python' } },
      },
      { secrets: ['DECLARED', 'FROM_CREDENTIAL', 'PYTHONPATH'], pythonEntrypoint: true, files: [{ name: 'tools/helper.py', content: 'def shout(s):\n    return s.upper() + "!"\n' }] },
    );
  });
  after(async () => {
    await h?.close();
  });

  it('reads a Python entrypoint at publish, dropping its functions', async () => {
    const org = (await h.running.core.stores.orgs.byName('default'))!;
    const version = await h.running.core.stores.agents.activeVersion(org._id, agentId);
    assert.deepEqual(version?.agent_config, { instructions: 'Test tools.', llm: 'basics', max_turns: 4 });
  });

  it('runs sync and async handlers with the declared secrets, a scratch folder and sibling modules', async () => {
    const sid = await startCase(h, agentId, 'basics', { secrets: { DECLARED: 's3cret', PYTHONPATH: '/etc', UNDECLARED: 'never' } });
    const all = await outcomes(h, sid);
    assert.deepEqual(outputOf(all, 'add'), { sum: 42, pair: [1, 2], nothing: null, text: 'café \ufffd' }, 'a lone surrogate arrives as one U+FFFD (a JSON escape, not three undecodable bytes)');
    assert.deepEqual(outputOf(all, 'later'), { awaited: [0, 1, 2], city: 'Oslo' });
    const ctx = outputOf<Record<string, unknown>>(all, 'context');
    assert.deepEqual(ctx.secrets, { DECLARED: 's3cret', FROM_CREDENTIAL: 'cred-value', PYTHONPATH: '/etc' });
    const env = ctx.env as Record<string, string>;
    assert.deepEqual({ ...env, TMPDIR: undefined }, { DECLARED: 's3cret', FROM_CREDENTIAL: 'cred-value', PYTHONPATH: '/etc', TMPDIR: undefined }, 'only the declared secrets and TMPDIR');
    assert.equal(ctx.scratch_is_tmp, true);
    assert.equal(ctx.storage_dir, null);
    assert.equal(ctx.back, 'kept for this call');
    assert.equal(ctx.helper, 'HI!', 'PYTHONPATH=/etc did not replace the module path (-I)');
    assert.equal(ctx.repr_hides_secrets, true);
  });

  it("writes the session's storage binding through context.storage_dir, and the files persist", async () => {
    const created = await h.api('/v1/storage-bindings', { method: 'POST', json: { name: `py-notes-${Date.now()}` } });
    assert.equal(created.status, 201);
    const binding = (await created.json()) as { id: string };
    const all = await outcomes(h, await startCase(h, agentId, 'storage', { storage_binding_id: binding.id }));
    assert.deepEqual(outputOf(all, 'keep'), { mounted: true, env_matches: true });
    const files = (await (await h.api(`/v1/storage-bindings/${binding.id}/files`)).json()) as { files: { path: string; size_bytes: number }[] };
    assert.deepEqual(files.files.map((f) => [f.path, f.size_bytes]), [['notes/py.txt', 11]]);
  });

  it('turns an exception, a non-JSON result, a missing handler and an exit into error results', async () => {
    const all = await outcomes(h, await startCase(h, agentId, 'errors'));
    assert.equal(errorOf(all, 'boom'), 'ValueError: no such city: Atlantis');
    assert.equal(errorOf(all, 'not_json'), "The handler's result is not JSON: TypeError: Object of type set is not JSON serializable");
    assert.match(errorOf(all, 'not_number'), /^The handler's result is not JSON: ValueError: Out of range float values/);
    assert.equal(errorOf(all, 'no_handler'), 'The tool module does not define a handler function.');
    assert.equal(errorOf(all, 'exits'), 'The tool process exited with code 3 before returning a result.');
  });

  it('stops a result over the cap, a busy or idle handler at its timeout, and one out of memory', async () => {
    const started = Date.now();
    const all = await outcomes(h, await startCase(h, agentId, 'limits'));
    assert.equal(errorOf(all, 'too_big'), "The tool's result is larger than 262144 bytes.");
    assert.equal(errorOf(all, 'busy'), 'The tool did not finish within its 1 s time limit and was stopped.');
    assert.equal(errorOf(all, 'idle'), 'The tool did not finish within its 1 s time limit and was stopped.');
    assert.match(errorOf(all, 'hog'), /^The tool ran out of memory \(limit \d+ MiB\)/);
    assert.ok(Date.now() - started < 20_000);
  });
});

describe('Python tools under the legacy wrappers', function () {
  it('are refused with why, and nothing of the module runs', async () => {
    const was = sandboxPolicy();
    const dir = await mkdtemp(join(tmpdir(), 'troupe-py-legacy-'));
    const marker = join(dir, 'ran');
    configureSandbox({ ...was, mode: 'legacy' });
    try {
      await writeFile(join(dir, 't.py'), `open(${JSON.stringify(marker)}, "w").close()\n\ndef handler(args, context):\n    return 1\n`);
      const r = await runInSandbox({ rootDir: dir, handlerPath: join(dir, 't.py'), scratchDir: dir, args: {}, env: {}, timeoutMs: 5000, memoryMb: 64, internetAccess: false });
      assert.equal(r.ok, false);
      assert.match((r as { error: string }).error, /^Python tools run only under the bubblewrap sandbox/);
      assert.equal(existsSync(marker), false);
    } finally {
      configureSandbox(was);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
