/**
 * Runs inside the sandbox process: reads `{handler, args, secrets, scratchDir}`
 * from stdin, calls `handler(args, {secrets, scratchDir})`, and writes one JSON result to fd 3.
 * Stdout stays the tool's own (console.log cannot corrupt the result), and
 * only Node built-ins are used: the permission model lets this process read
 * nothing but this file, the guard, the version's files and its scratch dir.
 */
import net = require('node:net');
import url = require('node:url');

interface RunnerInput {
  handler: string;
  args: unknown;
  secrets: Record<string, string>;
  scratchDir: string;
  storageDir?: string;
  exportName?: string;
}

type Outcome = { ok: true; output: unknown } | { ok: false; error: string };

const MAX_ERROR_CHARS = 4096;

function readStdin(): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    process.stdin.on('data', (c: Buffer) => chunks.push(c));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  });
}

/** CommonJS first; an ES module is imported instead. */
async function loadModule(path: string): Promise<Record<string, unknown>> {
  try {
    return require(path) as Record<string, unknown>;
  } catch (e) {
    if ((e as { code?: string }).code !== 'ERR_REQUIRE_ESM') throw e;
    return (await import(url.pathToFileURL(path).href)) as Record<string, unknown>;
  }
}

async function loadHandler(path: string): Promise<unknown> {
  const mod = await loadModule(path);
  const fallback = mod.default as Record<string, unknown> | undefined;
  return mod.handler ?? fallback?.handler;
}

function errorText(e: unknown): string {
  const text = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  return text.slice(0, MAX_ERROR_CHARS);
}

async function run(): Promise<Outcome> {
  const input = JSON.parse(await readStdin()) as RunnerInput;
  // bwrap sets PWD; the tool's environment is its secrets and TMPDIR, nothing of the sandbox's making.
  if (Object.hasOwn(input.secrets, 'PWD')) process.env.PWD = input.secrets.PWD;
  else delete process.env.PWD;
  if (input.exportName !== undefined) {
    // The entrypoint object, as data: JSON drops any functions it carries.
    const mod = await loadModule(input.handler);
    const value = mod[input.exportName] ?? (mod.default as Record<string, unknown> | undefined)?.[input.exportName];
    if (value === undefined) return { ok: false, error: `The module does not export ${input.exportName}.` };
    return { ok: true, output: JSON.parse(JSON.stringify(value)) as unknown };
  }
  const handler = await loadHandler(input.handler);
  if (typeof handler !== 'function') return { ok: false, error: 'The tool module does not export a handler function.' };
  const context = { secrets: { ...input.secrets }, scratchDir: input.scratchDir, storageDir: input.storageDir ?? null };
  const output = await (handler as (a: unknown, c: typeof context) => unknown)(input.args, context);
  return { ok: true, output: output === undefined ? null : output };
}

function serialize(outcome: Outcome): string {
  try {
    return JSON.stringify(outcome);
  } catch (e) {
    return JSON.stringify({ ok: false, error: `The handler's result is not JSON: ${errorText(e)}` });
  }
}

/** Exits once the result is flushed, so timers or sockets the handler left open cannot hold the call until its timeout. */
function report(outcome: Outcome): void {
  if (RESULT_FILE) {
    try {
      require('node:fs').writeFileSync(RESULT_FILE, serialize(outcome));
    } catch {
      // Over the size limit: the launcher answers for it.
    }
    process.exit(0);
  }
  const out = new net.Socket({ fd: 3, readable: false, writable: true });
  out.end(serialize(outcome), () => process.exit(0));
}

/** runsc passes no fd 3 (runsc.ts): there the result goes to a file in a bound directory. Read before the handler loads. */
const RESULT_FILE = process.env.TROUPE_RESULT_FILE;
delete process.env.TROUPE_RESULT_FILE;

run().then(report, (e: unknown) => report({ ok: false, error: errorText(e) }));
