import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Histogram } from 'prom-client';
import { webhookMetrics } from '../../actors/webhook/metrics.js';
import { Metrics } from '../../src/metrics/metrics.js';

const DOC = readFileSync(join(__dirname, '../../../docs/operations.md'), 'utf8');

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

function block(lang: string): string {
  const m = new RegExp('```' + lang + '\\n([\\s\\S]*?)\\n```').exec(DOC);
  assert.ok(m, `docs/operations.md has a ${lang} block`);
  return m[1];
}

/** Series names and the labels each PromQL expression uses with them. */
function checkExpr(expr: string, series: Map<string, Set<string>>): void {
  const used = [...expr.matchAll(/\b(troupe_[a-z_]+)(\{([^}]*)\})?/g)];
  assert.ok(used.length, `no Troupe series in ${expr}`);
  const known = new Set<string>();
  for (const [, name, , selector] of used) {
    const labels = series.get(name);
    assert.ok(labels, `${name} (in ${expr}) is not exported`);
    labels.forEach((l) => known.add(l));
    for (const [, label] of (selector ?? '').matchAll(/([a-z_]+)\s*(?:=~|!~|!=|=)/g)) assert.ok(labels.has(label), `${name} has no label ${label} (in ${expr})`);
  }
  for (const [, list] of expr.matchAll(/\bby \(([^)]*)\)/g)) {
    for (const label of list.split(',').map((l) => l.trim())) assert.ok(known.has(label), `"by (${list})" names ${label}, which none of its series has (in ${expr})`);
  }
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

  it('has alert rules whose expressions use exported series and labels', () => {
    const exprs = [...block('yaml').matchAll(/^\s+expr: (.+)$/gm)].map((m) => m[1]);
    assert.ok(exprs.length >= 5, `${exprs.length} alert rules`);
    for (const e of exprs) checkExpr(e, series);
  });

  it('has a Grafana dashboard that parses and whose panels query exported series and labels', () => {
    const dashboard = JSON.parse(block('json')) as { panels: { title: string; targets?: { expr: string }[] }[] };
    assert.ok(dashboard.panels.length >= 6, `${dashboard.panels.length} panels`);
    const queried = new Set<string>();
    for (const panel of dashboard.panels) {
      assert.ok(panel.targets?.length, `panel "${panel.title}" has a query`);
      for (const t of panel.targets) {
        checkExpr(t.expr, series);
        for (const [, name] of t.expr.matchAll(/\b(troupe_[a-z_]+)/g)) queried.add(name.replace(/_(bucket|count|sum)$/, ''));
      }
    }
    // The series the issue asks for are on the dashboard.
    for (const name of ['troupe_queue_jobs', 'troupe_actor_turn_duration_seconds', 'troupe_model_call_duration_seconds', 'troupe_router_selections_total', 'troupe_rate_limit_refusals_total', 'troupe_sse_clients']) {
      assert.ok(queried.has(name), `${name} is on the dashboard`);
    }
  });
});
