import type { SandboxResult } from './types.js';

export interface ExitFacts {
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  tooLarge: boolean;
  /** What the runner wrote to fd 3 (at most `limit` bytes). */
  result: Buffer;
  stderr: string;
  limit: number;
  timeoutMs: number;
  memoryMb: number;
}

/** V8's heap cap, or RLIMIT_DATA refusing an allocation (Python raises MemoryError). */
const OUT_OF_MEMORY = /heap out of memory|Reached heap limit|Array buffer allocation failed|Cannot allocate memory|std::bad_alloc|Out of memory|^MemoryError\b/im;

function parseResult(raw: Buffer): SandboxResult | null {
  if (raw.length === 0) return null;
  try {
    const r = JSON.parse(raw.toString('utf8')) as { ok?: unknown; output?: unknown; error?: unknown };
    if (r.ok === true) return { ok: true, output: r.output ?? null };
    if (r.ok === false) return { ok: false, kind: 'error', error: String(r.error) };
  } catch {
    // A truncated or forged write is no result.
  }
  return null;
}

/**
 * Turns how the process ended into one result. Our own kills come first
 * (timeout, output cap), then a result the runner reported, then the
 * process's death. Stderr is only matched, never returned: a tool may print
 * its secrets there.
 */
export function classifyExit(f: ExitFacts): SandboxResult {
  const seconds = Math.round(f.timeoutMs / 100) / 10;
  if (f.timedOut) return { ok: false, kind: 'timeout', error: `The tool did not finish within its ${seconds} s time limit and was stopped.` };
  if (f.tooLarge || f.result.length > f.limit) return { ok: false, kind: 'output_too_large', error: `The tool's result is larger than ${f.limit} bytes.` };
  const reported = parseResult(f.result);
  if (reported && !reported.ok && OUT_OF_MEMORY.test(reported.error)) return { ok: false, kind: 'memory', error: `The tool ran out of memory (limit ${f.memoryMb} MiB).` };
  if (reported) return reported;
  if (OUT_OF_MEMORY.test(f.stderr)) return { ok: false, kind: 'memory', error: `The tool ran out of memory (limit ${f.memoryMb} MiB) and was stopped.` };
  if (f.signal === 'SIGXCPU') return { ok: false, kind: 'timeout', error: `The tool used up its CPU time (${seconds} s) and was stopped.` };
  const how = f.signal ? `was killed by ${f.signal}` : `exited with code ${f.code}`;
  return { ok: false, kind: 'crash', error: `The tool process ${how} before returning a result.` };
}
