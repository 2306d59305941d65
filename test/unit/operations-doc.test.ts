import assert from 'node:assert/strict';
import { Histogram } from 'prom-client';
import { webhookMetrics } from '../../actors/webhook/metrics.js';
import { Metrics } from '../../src/lib/metrics/metrics.js';
import { alertQueries, dashboardQueries, OPERATIONS_DOC as DOC, type DocQuery } from '../support/operations-doc.js';

/** Every series a Troupe process can export, with its label names (histograms with their suffixes and `le`). */
function exported(): Map<string, Set<string>> {
  const m = new Metrics('doc');
  webhookMetrics(m.registry);
  const out = new Map<string, Set<string>>();
  for (const metric of m.registry.getMetricsAsArray()) {
    const { name, labelNames } = metric as unknown as { name: string; labelNames?: string[] };
    const labels = new Set(['role', ...(labelNames ?? [])]);
    out.set(name, labels);
    if (metric instanceof Histogram) {
      out.set(`${name}_bucket`, new Set([...labels, 'le']));
      for (const suffix of ['_count', '_sum']) out.set(name + suffix, labels);
    }
  }
  return out;
}

/** The series and labels one query of the doc uses are all exported. */
function checkQuery(q: DocQuery, series: Map<string, Set<string>>): void {
  assert.ok(q.series.length, `no Troupe series in ${q.expr}`);
  const known = new Set<string>();
  for (const { name, matchers } of q.series) {
    const labels = series.get(name);
    assert.ok(labels, `${name} (in ${q.expr}) is not exported`);
    labels.forEach((l) => known.add(l));
    for (const { label } of matchers) assert.ok(labels.has(label), `${name} has no label ${label} (in ${q.expr})`);
  }
  for (const label of q.by) assert.ok(known.has(label), `"by" names ${label}, which none of its series has (in ${q.expr})`);
}

describe('docs/operations.md', () => {
  const series = exported();

  it('lists every Troupe series with the labels it really has', () => {
    const table = DOC.slice(DOC.indexOf('## Series'), DOC.indexOf('## Example alerts'));
    const listed = new Set<string>();
    for (const line of table.split('\n').filter((l) => l.startsWith('| `troupe_'))) {
      const [names, , labels] = line.split('|').slice(1).map((c) => c.trim());
      for (const [, name] of names.matchAll(/`(troupe_[a-z_]+)`/g)) {
        assert.ok(series.has(name), `${name} is listed but not exported`);
        listed.add(name);
        if (!labels) continue;
        const documented = labels.replace(/\([^)]*\)/g, '').split(',').map((l) => l.trim()).filter(Boolean);
        assert.deepEqual(new Set(documented), new Set([...series.get(name)!].filter((l) => l !== 'role')), `labels of ${name}`);
      }
    }
    const defaults = /^troupe_(process|nodejs)_/;
    const base = [...series.keys()].filter((n) => !defaults.test(n) && !/_(bucket|count|sum)$/.test(n));
    assert.deepEqual(base.filter((n) => !listed.has(n)), [], 'every series is documented');
  });

  it('takes the max of the queue gauges over processes, never their sum', () => {
    // Every worker reads the same queues from Redis: a sum over processes counts the backlog once per worker.
    const queued = [...alertQueries(), ...dashboardQueries()].filter((q) => q.series.some((s) => s.name.startsWith('troupe_queue_')));
    assert.ok(queued.length >= 3, `${queued.length} queries of the queue gauges`);
    for (const q of queued) assert.match(q.expr, /^max( by \([^)]*\))? ?\(/, `${q.where}: ${q.expr}`);
  });

  it('has alert rules whose expressions use exported series and labels', () => {
    const queries = alertQueries();
    assert.ok(queries.length >= 5, `${queries.length} alert rules`);
    for (const q of queries) checkQuery(q, series);
  });

  it('has a Grafana dashboard that parses and whose panels query exported series and labels', () => {
    const dashboard = JSON.parse(/```json\n([\s\S]*?)\n```/.exec(DOC)![1]) as { panels: { title: string; targets?: unknown[] }[] };
    assert.ok(dashboard.panels.length >= 6, `${dashboard.panels.length} panels`);
    for (const panel of dashboard.panels) assert.ok(panel.targets?.length, `panel "${panel.title}" has a query`);
    const queried = new Set<string>();
    for (const q of dashboardQueries()) {
      checkQuery(q, series);
      for (const { name } of q.series) queried.add(name.replace(/_(bucket|count|sum)$/, ''));
    }
    // The series the issue asks for are on the dashboard.
    for (const name of ['troupe_queue_jobs', 'troupe_actor_turn_duration_seconds', 'troupe_model_call_duration_seconds', 'troupe_router_selections_total', 'troupe_rate_limit_refusals_total', 'troupe_sse_clients', 'troupe_spend_usd_total', 'troupe_budget_refusals_total', 'troupe_budget_thresholds_total', 'troupe_router_breaker_transitions_total']) {
      assert.ok(queried.has(name), `${name} is on the dashboard`);
    }
  });
});
