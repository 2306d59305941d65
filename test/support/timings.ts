import Mocha from 'mocha';

/**
 * Per-file wall time, for keeping CI under its bound: with TROUPE_TEST_TIMINGS=1, a run required with
 * `--require dist/test/support/timings.js` (as `npm test` does) ends by printing each spec file's wall time,
 * slowest first. A file's time runs from its first top-level suite's start to its last one's end, so it
 * counts its before/after hooks (harness start and stop), which mocha's per-test times leave out.
 * Without the variable it does nothing.
 */
export function fileTimings(events: { file: string; start: number; end: number }[]): { file: string; ms: number }[] {
  const byFile = new Map<string, number>();
  for (const e of events) byFile.set(e.file, (byFile.get(e.file) ?? 0) + (e.end - e.start));
  return [...byFile].map(([file, ms]) => ({ file, ms })).sort((a, b) => b.ms - a.ms || a.file.localeCompare(b.file));
}

export function formatTimings(rows: { file: string; ms: number }[], cwd = process.cwd()): string {
  const total = rows.reduce((n, r) => n + r.ms, 0);
  // Files under 0.1 s (most unit tests) are counted, not listed: they are never where the time goes.
  const shown = rows.filter((r) => r.ms >= 100);
  const lines = shown.map((r) => `  ${(r.ms / 1000).toFixed(1).padStart(7)} s  ${r.file.startsWith(`${cwd}/`) ? r.file.slice(cwd.length + 1) : r.file}`);
  if (shown.length < rows.length) lines.push(`  and ${rows.length - shown.length} file(s) under 0.1 s each`);
  return `\nwall time per file (TROUPE_TEST_TIMINGS), ${(total / 1000).toFixed(0)} s in all:\n${lines.join('\n')}\n`;
}

if (process.env.TROUPE_TEST_TIMINGS === '1') {
  // A root hook cannot see suite boundaries, so the runner's events are read instead: every run of this
  // mocha process (there is one per config) reports on its own.
  const run = Mocha.Runner.prototype.run;
  Mocha.Runner.prototype.run = function (this: Mocha.Runner, ...args: Parameters<Mocha.Runner['run']>) {
    const events: { file: string; start: number; end: number }[] = [];
    const open = new Map<Mocha.Suite, number>();
    this.on(Mocha.Runner.constants.EVENT_SUITE_BEGIN, (suite: Mocha.Suite) => {
      if (suite.parent?.root && suite.file) open.set(suite, Date.now());
    });
    this.on(Mocha.Runner.constants.EVENT_SUITE_END, (suite: Mocha.Suite) => {
      const start = open.get(suite);
      if (start !== undefined && suite.file) events.push({ file: suite.file, start, end: Date.now() });
    });
    this.once(Mocha.Runner.constants.EVENT_RUN_END, () => process.stdout.write(formatTimings(fileTimings(events))));
    return run.apply(this, args);
  };
}
