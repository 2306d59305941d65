import type { Context, Suite, Test } from 'mocha';

/**
 * Skips `npm test` allows, each with why: a test that needs what one leg of the matrix has and another has
 * not (a Redis Cluster, one MongoDB-wire server, a local server to restart). Every one of them runs on
 * another leg of the same `npm test`. Matched on the test's full title from its start.
 */
export const ALLOWED_SKIPS: readonly { title: string; why: string }[] = [
  { title: 'PubSubHub: a silent subscriber', why: 'one redis-server behind a proxy; runs on the single-server legs' },
  { title: 'PubSubHub on a Redis Cluster: a silent shard subscriber', why: 'needs a Redis Cluster; runs on the redis-cluster leg' },
  { title: 'session batches: interactive work goes first hands off every first turn of a batch larger than one wake slice', why: 'FerretDB v1 on SQLite drains 1,200 sessions in minutes; the hand-off is the same code on every store and runs on the other legs' },
  { title: 'many processes on a Redis Cluster', why: 'the Procfile roles as separate processes on a Redis Cluster; runs on the redis-cluster leg' },
  { title: 'SSE catch-up after a subscriber reconnect', why: 'one redis-server; runs on the single-server legs (not in the cluster config)' },
  { title: 'MongoDB semantics Troupe relies on a unique compound index counts a missing field as null', why: 'FerretDB v1 differs and Troupe never relies on it; runs on the other leg' },
  { title: 'local services launcher: data kept across a restart', why: 'a leg given MONGODB_URL has no local server to restart' },
  { title: 'local services launcher: data kept across a restart opens a file written before documents were stored as BSON', why: "a mongo-java-server file; runs on that server's leg" },
  { title: 'npm start: Ctrl-C stops the roles first, then the local servers', why: 'a leg given MONGODB_URL has no local server to start' },
];

function pending(suite: Suite): Test[] {
  return [...suite.tests.filter((t) => t.isPending()), ...suite.suites.flatMap(pending)];
}

/**
 * A root hook (`--require dist/test/support/skips.js`, which `npm test` passes): a check that skipped
 * itself passes silently, so after the run every skipped test must be one of ALLOWED_SKIPS, else the run
 * fails naming it. Those allowed are listed, so a leg's output says what it did not run.
 */
export const mochaHooks = {
  afterAll(this: Context) {
    let root: Suite | undefined = this.test?.parent;
    while (root?.parent) root = root.parent;
    if (!root) return;
    const skipped = pending(root).map((t) => t.fullTitle());
    const allowed = (title: string) => ALLOWED_SKIPS.find((a) => title.startsWith(a.title));
    for (const title of skipped) {
      const a = allowed(title);
      if (a) process.stdout.write(`  skipped on this leg: ${title} (${a.why})\n`);
    }
    const refused = skipped.filter((t) => !allowed(t));
    if (refused.length) throw new Error(`${refused.length} test(s) skipped themselves; a required check must fail instead of skipping (or be listed in test/support/skips.ts with why):\n  ${refused.join('\n  ')}`);
  },
};
