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
  /** With exportName: run one step of the export's run function (args is the step's input). */
  agentStep?: boolean;
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
    const mod = await loadModule(input.handler);
    const value = mod[input.exportName] ?? (mod.default as Record<string, unknown> | undefined)?.[input.exportName];
    if (value === undefined) return { ok: false, error: `The module does not export ${input.exportName}.` };
    const run = (value as { run?: unknown } | null)?.run;
    if (input.agentStep) return typeof run === 'function' ? { ok: true, output: await agentStep(value as object, run as AgentRun, input.args as StepInput) } : { ok: false, error: `${input.exportName} has no run function.` };
    // The entrypoint object, as data: JSON drops any functions it carries; a run function is marked (a code agent).
    const data = JSON.parse(JSON.stringify(value)) as unknown;
    if (typeof run === 'function' && data && typeof data === 'object') (data as Record<string, unknown>).run = '[run function]';
    return { ok: true, output: data };
  }
  const handler = await loadHandler(input.handler);
  if (typeof handler !== 'function') return { ok: false, error: 'The tool module does not export a handler function.' };
  const context = { secrets: { ...input.secrets }, scratchDir: input.scratchDir, storageDir: input.storageDir ?? null };
  const output = await (handler as (a: unknown, c: typeof context) => unknown)(input.args, context);
  return { ok: true, output: output === undefined ? null : output };
}

/*
 * A code agent's step (docs/code-agents.md): the run function runs from the start with a `ctx` whose calls are
 * numbered in the order they are made. A call the journal holds returns its recorded result at once (a microtask);
 * the first calls past it are reported, with every other call started before the run waits, and the process
 * exits without waiting for them: the session actor records them, has them carried out, and runs the next step.
 */
interface JournalEntry {
  position: number;
  kind: string;
  name: string;
  arguments: unknown;
  result?: { ok: true; output: unknown } | { ok: false; error: string };
}
interface StepInput {
  input: string;
  message: unknown;
  /** Absent until the message's run has called ctx.transcript() once. */
  transcript?: unknown;
  journal: JournalEntry[];
}
type AgentRun = (ctx: unknown, input: string) => unknown;
type StepCall = { position: number; kind: string; name: string; arguments: Record<string, unknown> };

/** JSON with sorted keys: the same arguments compare equal however their keys were ordered when stored. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(',')}}`;
  return JSON.stringify(v ?? null);
}

function describe(kind: string, name: string, args: unknown): string {
  const text = `${kind} ${name}(${canonical(args)})`;
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/** What ctx.model and ctx.tool reject with when the journaled call failed. */
class CallFailed extends Error {
  override name = 'CallFailed';
}

async function agentStep(self: object, run: AgentRun, step: StepInput): Promise<unknown> {
  const journal = new Map(step.journal.map((e) => [e.position, e]));
  const calls: StepCall[] = [];
  const emits: { position: number; text: string }[] = [];
  let next = 0;
  let diverged: string | null = null;
  let wanted = false;
  let used = false;
  // Told to the host, which then sends the message's later steps the transcript (run-agent-step.ts).
  const told = <T extends object>(outcome: T) => (used ? { ...outcome, transcript_used: true } : outcome);
  const check = (position: number, kind: string, name: string, args: unknown): JournalEntry | undefined => {
    const recorded = journal.get(position);
    if (recorded && !diverged && (recorded.kind !== kind || recorded.name !== name || canonical(recorded.arguments) !== canonical(args))) {
      diverged = `nondeterministic_replay: at position ${position} the run called ${describe(kind, name, args)}, but the journal has ${describe(recorded.kind, recorded.name, recorded.arguments)}.`;
    }
    return recorded;
  };
  const call = (kind: string, name: string, raw: unknown): Promise<unknown> => {
    const position = next++;
    const args = JSON.parse(JSON.stringify(raw ?? {})) as Record<string, unknown>;
    const recorded = check(position, kind, name, args);
    if (diverged) return new Promise(() => undefined);
    if (recorded?.result) return recorded.result.ok ? Promise.resolve(recorded.result.output) : Promise.reject(new CallFailed(recorded.result.error));
    if (!recorded) calls.push({ position, kind, name, arguments: args });
    return new Promise(() => undefined);
  };
  const ctx = Object.freeze({
    input: step.input,
    message: step.message,
    model: (req: Record<string, unknown> = {}) => call('model', typeof req.llm_id === 'string' ? req.llm_id : 'default', req),
    tool: (name: string, args: Record<string, unknown> = {}) => call('tool', String(name), args),
    sleep: (ms: number) => call('sleep', 'sleep', { ms: Number(ms) }),
    emit: (text: unknown) => {
      const position = next++;
      if (!check(position, 'emit', 'emit', { text: String(text) }) && !diverged) emits.push({ position, text: String(text) });
    },
    // Sent only to a message whose run asked for it (actors/tool-runner/run-agent-step.ts): without it, the step stops
    // and asks, and is run again with it. What this run does meanwhile is dropped with its outcome.
    transcript: () => {
      if (step.transcript === undefined) wanted = true;
      else used = true;
      return step.transcript ?? [];
    },
  });
  const end: { settled: { ok: true; value: unknown } | { ok: false; error: unknown } | null } = { settled: null };
  Promise.resolve()
    .then(() => run.call(self, ctx, step.input))
    .then((value) => (end.settled = { ok: true, value }), (error: unknown) => (end.settled = { ok: false, error }));
  // Journaled results resolve as microtasks, so one macrotask turn sees the run at its first real wait; a second
  // one with no new call confirms every parallel call has been started. A run awaiting its own timers is waited for.
  let seen = -1;
  for (let turn = 0; ; turn++) {
    // Past the first turns the run waits on something of its own: poll gently until it settles or calls (the timeout bounds it).
    await new Promise((resolve) => (turn < 3 ? setImmediate(resolve) : setTimeout(resolve, 20)));
    if (wanted) return { kind: 'transcript' };
    if (diverged) return told({ kind: 'failed', emits, error: diverged });
    const done = end.settled;
    if (done) return told(done.ok ? { kind: 'done', emits, answer: typeof done.value === 'string' ? done.value : done.value ?? null } : { kind: 'failed', emits, error: errorText(done.error) });
    if (calls.length > 0 && calls.length === seen) return told({ kind: 'suspend', emits, calls });
    seen = calls.length;
  }
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
