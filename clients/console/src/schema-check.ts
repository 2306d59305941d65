/**
 * Checks a value against a tool's output_schema before the console submits
 * it. The server stays the authority; this catches mistakes while the person
 * is still at the form. It covers the JSON Schema keywords tool schemas use
 * (test/unit/console-schema-check.test.ts holds it to ajv's verdicts); an
 * unknown keyword is ignored, never a false refusal.
 */
type Schema = Record<string, unknown>;

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function typeMatches(want: string, v: unknown): boolean {
  const got = typeOf(v);
  return want === got || (want === 'number' && got === 'integer');
}

export function checkSchema(schema: unknown, value: unknown, path = '$'): string[] {
  if (schema === true || schema === undefined || schema === null) return [];
  if (schema === false) return [`${path} is not allowed`];
  const s = schema as Schema;
  const errors: string[] = [];
  const types = s.type === undefined ? [] : Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
  if (types.length && !types.some((t) => typeMatches(t, value))) return [`${path} must be ${types.join(' or ')}, not ${typeOf(value)}`];
  if ('const' in s && JSON.stringify(s.const) !== JSON.stringify(value)) errors.push(`${path} must be ${JSON.stringify(s.const)}`);
  if (Array.isArray(s.enum) && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) errors.push(`${path} must be one of ${s.enum.map((e) => JSON.stringify(e)).join(', ')}`);
  if (typeof value === 'number') {
    if (typeof s.minimum === 'number' && value < s.minimum) errors.push(`${path} must be ≥ ${s.minimum}`);
    if (typeof s.maximum === 'number' && value > s.maximum) errors.push(`${path} must be ≤ ${s.maximum}`);
  }
  if (typeof value === 'string') {
    const len = [...value].length;
    if (typeof s.minLength === 'number' && len < s.minLength) errors.push(`${path} must have at least ${s.minLength} characters`);
    if (typeof s.maxLength === 'number' && len > s.maxLength) errors.push(`${path} must have at most ${s.maxLength} characters`);
    if (typeof s.pattern === 'string' && !new RegExp(s.pattern, 'u').test(value)) errors.push(`${path} must match ${s.pattern}`);
  }
  if (Array.isArray(value)) {
    if (typeof s.minItems === 'number' && value.length < s.minItems) errors.push(`${path} must have at least ${s.minItems} items`);
    if (typeof s.maxItems === 'number' && value.length > s.maxItems) errors.push(`${path} must have at most ${s.maxItems} items`);
    if (s.items && typeof s.items === 'object') value.forEach((v, i) => errors.push(...checkSchema(s.items, v, `${path}[${i}]`)));
  }
  if (typeOf(value) === 'object') {
    const obj = value as Record<string, unknown>;
    const props = (s.properties ?? {}) as Record<string, unknown>;
    for (const r of (s.required ?? []) as string[]) if (!(r in obj)) errors.push(`${path}.${r} is required`);
    for (const [k, v] of Object.entries(obj)) {
      if (k in props) errors.push(...checkSchema(props[k], v, `${path}.${k}`));
      else if (s.additionalProperties === false) errors.push(`${path}.${k} is not allowed`);
      else if (s.additionalProperties && typeof s.additionalProperties === 'object') errors.push(...checkSchema(s.additionalProperties, v, `${path}.${k}`));
    }
  }
  for (const sub of (s.allOf ?? []) as unknown[]) errors.push(...checkSchema(sub, value, path));
  if (Array.isArray(s.anyOf) && !s.anyOf.some((sub) => checkSchema(sub, value, path).length === 0)) errors.push(`${path} matches none of the allowed shapes`);
  if (Array.isArray(s.oneOf) && s.oneOf.filter((sub) => checkSchema(sub, value, path).length === 0).length !== 1) errors.push(`${path} must match exactly one allowed shape`);
  return errors;
}
