import { appendFileSync, readFileSync } from 'node:fs';
import Mocha from 'mocha';

/**
 * Which tests failed, for the matrix summary: CI keeps only the tail of a long log, and a leg's mocha output
 * names its failures far above the summary. With TROUPE_TEST_FAILURES_FILE set (run-tests.ts sets one per
 * mocha run), each failure appends one JSON line: the test's full title and the first line of its error.
 */
export interface RecordedFailure {
  title: string;
  error: string;
}

export function failureLine(title: string, err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  // One line, bounded: an assertion's diff can run to pages, and the summary wants the gist.
  return `${JSON.stringify({ title, error: message.split('\n')[0].slice(0, 300) })}\n`;
}

/** The failures a run recorded, in order; a missing file (no failure, or no run) reads as none. */
export function readFailures(path: string): RecordedFailure[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as RecordedFailure);
}

const file = process.env.TROUPE_TEST_FAILURES_FILE;
if (file) {
  const run = Mocha.Runner.prototype.run;
  Mocha.Runner.prototype.run = function (this: Mocha.Runner, ...args: Parameters<Mocha.Runner['run']>) {
    this.on(Mocha.Runner.constants.EVENT_TEST_FAIL, (test: Mocha.Runnable, err: unknown) => appendFileSync(file, failureLine(test.fullTitle(), err)));
    return run.apply(this, args);
  };
}
