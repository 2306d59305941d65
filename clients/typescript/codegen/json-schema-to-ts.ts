/**
 * A JSON Schema (the subset the route schemas use) as a TypeScript type
 * expression. Deliberately small: the route schemas are ours, so every
 * keyword they use is handled here and anything else widens to `unknown`.
 */
type Schema = Record<string, unknown>;

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function literal(v: unknown): string {
  return JSON.stringify(v);
}

export function comment(s: Schema, indent: string): string {
  const d = typeof s.description === 'string' ? s.description : '';
  return d ? `${indent}/** ${d.replace(/\*\//g, '*\\/')} */\n` : '';
}

function union(parts: string[]): string {
  const unique = [...new Set(parts)];
  return unique.length === 1 ? unique[0] : unique.map((p) => (p.includes('=>') ? `(${p})` : p)).join(' | ');
}

function objectType(s: Schema, indent: string): string {
  const props = (s.properties ?? {}) as Record<string, Schema>;
  const required = new Set((s.required ?? []) as string[]);
  const inner = indent + '  ';
  const lines = Object.entries(props).map(([name, p]) => {
    const key = IDENT.test(name) ? name : literal(name);
    return `${comment(p, inner)}${inner}${key}${required.has(name) ? '' : '?'}: ${toTs(p, inner)};`;
  });
  const extra = s.additionalProperties;
  if (extra && typeof extra === 'object') lines.push(`${inner}[key: string]: ${toTs(extra as Schema, inner)};`);
  else if (extra !== false && lines.length === 0) return 'Record<string, unknown>';
  return lines.length ? `{\n${lines.join('\n')}\n${indent}}` : 'Record<string, never>';
}

function byType(t: string, s: Schema, indent: string): string {
  switch (t) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      return s.items ? `Array<${toTs(s.items as Schema, indent)}>` : 'unknown[]';
    case 'object':
      return objectType(s, indent);
    default:
      return 'unknown';
  }
}

/** `#/components/schemas/LedgerEvent` → `LedgerEvent`: components become named types of the generated file. */
export function refName(ref: string): string | null {
  return /^#\/components\/schemas\/([A-Za-z_][A-Za-z0-9_]*)$/.exec(ref)?.[1] ?? null;
}

export function toTs(s: Schema | undefined, indent = ''): string {
  if (!s || typeof s !== 'object') return 'unknown';
  if (typeof s.$ref === 'string') return refName(s.$ref) ?? 'unknown';
  if ('const' in s) return literal(s.const);
  if (Array.isArray(s.enum)) return union(s.enum.map(literal));
  if (Array.isArray(s.oneOf)) return union((s.oneOf as Schema[]).map((x) => toTs(x, indent)));
  if (Array.isArray(s.anyOf)) return union((s.anyOf as Schema[]).map((x) => toTs(x, indent)));
  // `allOf: [{if, then}, ...]` is how a body picks its shape by `type`: the union of the branches.
  if (Array.isArray(s.allOf) && (s.allOf as Schema[]).every((x) => x.if && x.then)) {
    return union((s.allOf as Schema[]).map((x) => toTs(x.then as Schema, indent)));
  }
  if (Array.isArray(s.type)) return union((s.type as string[]).map((t) => byType(t, s, indent)));
  if (typeof s.type === 'string') return byType(s.type, s, indent);
  if (s.properties) return objectType(s, indent);
  return 'unknown';
}
