import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** docs/operations.md, as an operator copies it. */
export const OPERATIONS_DOC = readFileSync(join(__dirname, '../../../docs/operations.md'), 'utf8');

/** One label matcher of a PromQL selector, e.g. `queue="session"`. */
export interface Matcher {
  label: string;
  op: '=' | '!=' | '=~' | '!~';
  value: string;
}

/** A Troupe series an expression selects, with its matchers. */
export interface Selected {
  name: string;
  matchers: Matcher[];
}

/** A PromQL expression of the doc and where it is (alert name or panel title). */
export interface DocQuery {
  where: string;
  expr: string;
  series: Selected[];
  /** Labels named in `by (...)` clauses. */
  by: string[];
}

function block(lang: string): string {
  const m = new RegExp('```' + lang + '\\n([\\s\\S]*?)\\n```').exec(OPERATIONS_DOC);
  assert.ok(m, `docs/operations.md has a ${lang} block`);
  return m[1];
}

/** The Troupe series and `by` labels of one PromQL expression. */
export function parseQuery(where: string, expr: string): DocQuery {
  const series = [...expr.matchAll(/\b(troupe_[a-z_]+)(\{([^}]*)\})?/g)].map(([, name, , selector]) => ({
    name,
    matchers: [...(selector ?? '').matchAll(/([a-z_]+)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"/g)].map(([, label, op, value]) => ({ label, op: op as Matcher['op'], value })),
  }));
  const by = [...expr.matchAll(/\bby \(([^)]*)\)/g)].flatMap(([, list]) => list.split(',').map((l) => l.trim()));
  return { where, expr, series, by };
}

/** Every expression of the example alerts. */
export function alertQueries(): DocQuery[] {
  const yaml = block('yaml');
  const out: DocQuery[] = [];
  let alert = '?';
  for (const line of yaml.split('\n')) {
    const name = /^\s+- alert: (\S+)/.exec(line);
    if (name) alert = name[1];
    const expr = /^\s+expr: (.+)$/.exec(line);
    if (expr) out.push(parseQuery(`alert ${alert}`, expr[1]));
  }
  return out;
}

/** Every target expression of the Grafana dashboard. */
export function dashboardQueries(): DocQuery[] {
  const dashboard = JSON.parse(block('json')) as { panels: { title: string; targets?: { expr: string }[] }[] };
  return dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => parseQuery(`panel "${p.title}"`, t.expr)));
}

/** A sample line of Prometheus text exposition: name and labels. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
}

/** The samples of a /metrics page (comments skipped). */
export function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? \S+$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    out.push({ name: m[1], labels });
  }
  return out;
}
