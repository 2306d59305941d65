/**
 * Checks a value against a tool's output_schema before the console submits
 * it. The server stays the authority; this catches mistakes while the person
 * is still at the form, and must never refuse what the server would take: the
 * form has no way past a refusal. It judges the JSON Schema keywords below
 * (test/unit holds it to the server's ajv), resolves `$ref`s inside the schema
 * (`#/definitions/…`, `#/$defs/…`, as schema generators write them), and
 * ignores any other keyword. A problem found through a keyword it judges is
 * real, so a failed branch of `anyOf` is a real failure; but a branch it
 * cannot fully judge may fail on the server, so `oneOf` ("exactly one") and
 * `not` are refused only on what it judges fully.
 */
type Schema = Record<string, unknown>;

/** Keywords that change what is valid and that checkSchema applies. */
const JUDGED = new Set(['type', 'const', 'enum', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'minLength', 'maxLength', 'pattern', 'items', 'minItems', 'maxItems', 'uniqueItems', 'properties', 'patternProperties', 'additionalProperties', 'required', 'minProperties', 'maxProperties', 'allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else', '$ref']);
/** Keywords that change nothing about validity. */
const NOTES = new Set(['$schema', '$id', '$comment', 'title', 'description', 'default', 'examples', 'example', 'definitions', '$defs', 'readOnly', 'writeOnly', 'deprecated', 'nullable']);

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

/** JSON equality: key order does not matter, as for ajv's const and enum. */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeOf(a) !== typeOf(b) || typeof a !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((x, i) => same(x, (b as unknown[])[i]));
  const ka = Object.keys(a);
  const kb = Object.keys(b as object);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b as object, k) && same((a as Schema)[k], (b as Schema)[k]));
}

/** The schema a local `$ref` ("#", "#/definitions/x", "#/$defs/x") names in the root, else undefined. */
function resolve(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#')) return undefined;
  let at: unknown = root;
  for (const raw of ref.slice(1).split('/').slice(1)) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!at || typeof at !== 'object' || !Object.hasOwn(at, key)) return undefined;
    at = (at as Schema)[key];
  }
  return at;
}

interface Walk {
  root: unknown;
  depth: number;
}

/** Whether every keyword of the schema, and of the schemas inside it, is one checkSchema applies or one that changes nothing. */
function judgedFully(schema: unknown, w: Walk): boolean {
  if (typeof schema === 'boolean' || schema === undefined) return true;
  if (!schema || typeof schema !== 'object' || Array.isArray(schema) || w.depth > 32) return false;
  const s = schema as Schema;
  const inner = { ...w, depth: w.depth + 1 };
  for (const [k, v] of Object.entries(s)) {
    if (NOTES.has(k)) continue;
    if (!JUDGED.has(k)) return false;
    if (k === '$ref' && (typeof v !== 'string' || resolve(w.root, v) === undefined || !judgedFully(resolve(w.root, v), inner))) return false;
    if (k === 'items' && Array.isArray(v)) return false;
    if (['items', 'additionalProperties', 'not', 'if', 'then', 'else'].includes(k) && typeof v === 'object' && !Array.isArray(v) && !judgedFully(v, inner)) return false;
    if (['properties', 'patternProperties'].includes(k) && !Object.values(v as Schema).every((sub) => judgedFully(sub, inner))) return false;
    if (['allOf', 'anyOf', 'oneOf'].includes(k) && !(v as unknown[]).every((sub) => judgedFully(sub, inner))) return false;
  }
  return true;
}

export function checkSchema(schema: unknown, value: unknown, path = '$'): string[] {
  return check(schema, value, path, { root: schema, depth: 0 });
}

function check(schema: unknown, value: unknown, path: string, w: Walk): string[] {
  if (schema === true || schema === undefined || schema === null) return [];
  if (schema === false) return [`${path} is not allowed`];
  // A reference loop that never reaches the value's leaves is the server's to judge.
  if (typeof schema !== 'object' || Array.isArray(schema) || w.depth > 64) return [];
  const s = schema as Schema;
  const inner = { ...w, depth: w.depth + 1 };
  const sub = (sch: unknown, v: unknown, p: string) => check(sch, v, p, inner);
  const types = s.type === undefined ? [] : Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
  if (types.length && !types.some((t) => typeMatches(t, value))) return [`${path} must be ${types.join(' or ')}, not ${typeOf(value)}`];
  const errors: string[] = [];
  if (typeof s.$ref === 'string') errors.push(...sub(resolve(w.root, s.$ref), value, path));
  if ('const' in s && !same(s.const, value)) errors.push(`${path} must be ${JSON.stringify(s.const)}`);
  if (Array.isArray(s.enum) && !s.enum.some((e) => same(e, value))) errors.push(`${path} must be one of ${s.enum.map((e) => JSON.stringify(e)).join(', ')}`);
  if (typeof value === 'number') errors.push(...numberProblems(s, value, path));
  if (typeof value === 'string') errors.push(...stringProblems(s, value, path));
  if (Array.isArray(value)) {
    if (typeof s.minItems === 'number' && value.length < s.minItems) errors.push(`${path} must have at least ${s.minItems} items`);
    if (typeof s.maxItems === 'number' && value.length > s.maxItems) errors.push(`${path} must have at most ${s.maxItems} items`);
    if (s.uniqueItems === true && value.some((v, i) => value.findIndex((x) => same(x, v)) !== i)) errors.push(`${path} must not repeat an item`);
    if (s.items !== undefined && !Array.isArray(s.items)) value.forEach((v, i) => errors.push(...sub(s.items, v, `${path}[${i}]`)));
  }
  if (typeOf(value) === 'object') errors.push(...objectProblems(s, value as Record<string, unknown>, path, inner));
  for (const one of (s.allOf ?? []) as unknown[]) errors.push(...sub(one, value, path));
  if (Array.isArray(s.anyOf) && !s.anyOf.some((one) => sub(one, value, path).length === 0)) errors.push(`${path} matches none of the allowed shapes`);
  if (Array.isArray(s.oneOf)) {
    const passing = s.oneOf.filter((one) => sub(one, value, path).length === 0);
    const surelyPassing = passing.filter((one) => judgedFully(one, inner));
    if (!passing.length) errors.push(`${path} matches none of the allowed shapes`);
    else if (surelyPassing.length > 1) errors.push(`${path} must match exactly one allowed shape, not ${surelyPassing.length}`);
  }
  if (s.not !== undefined && judgedFully(s.not, inner) && sub(s.not, value, path).length === 0) errors.push(`${path} matches a shape it must not`);
  if (s.if !== undefined && judgedFully(s.if, inner)) {
    const branch = sub(s.if, value, path).length === 0 ? s.then : s.else;
    errors.push(...sub(branch, value, path));
  }
  return errors;
}

function numberProblems(s: Schema, value: number, path: string): string[] {
  const errors: string[] = [];
  if (typeof s.minimum === 'number' && value < s.minimum) errors.push(`${path} must be ≥ ${s.minimum}`);
  if (typeof s.maximum === 'number' && value > s.maximum) errors.push(`${path} must be ≤ ${s.maximum}`);
  if (typeof s.exclusiveMinimum === 'number' && value <= s.exclusiveMinimum) errors.push(`${path} must be > ${s.exclusiveMinimum}`);
  if (typeof s.exclusiveMaximum === 'number' && value >= s.exclusiveMaximum) errors.push(`${path} must be < ${s.exclusiveMaximum}`);
  if (typeof s.multipleOf === 'number' && s.multipleOf > 0 && !Number.isInteger(value / s.multipleOf)) errors.push(`${path} must be a multiple of ${s.multipleOf}`);
  return errors;
}

function stringProblems(s: Schema, value: string, path: string): string[] {
  const errors: string[] = [];
  const len = [...value].length;
  if (typeof s.minLength === 'number' && len < s.minLength) errors.push(`${path} must have at least ${s.minLength} characters`);
  if (typeof s.maxLength === 'number' && len > s.maxLength) errors.push(`${path} must have at most ${s.maxLength} characters`);
  if (typeof s.pattern === 'string' && !new RegExp(s.pattern, 'u').test(value)) errors.push(`${path} must match ${s.pattern}`);
  return errors;
}

function objectProblems(s: Schema, obj: Record<string, unknown>, path: string, w: Walk): string[] {
  const errors: string[] = [];
  const props = (s.properties ?? {}) as Record<string, unknown>;
  const patterns = Object.entries((s.patternProperties ?? {}) as Record<string, unknown>).map(([p, sch]) => [new RegExp(p, 'u'), sch] as const);
  const keys = Object.keys(obj);
  for (const r of (s.required ?? []) as string[]) if (!Object.hasOwn(obj, r)) errors.push(`${path}.${r} is required`);
  if (typeof s.minProperties === 'number' && keys.length < s.minProperties) errors.push(`${path} must have at least ${s.minProperties} properties`);
  if (typeof s.maxProperties === 'number' && keys.length > s.maxProperties) errors.push(`${path} must have at most ${s.maxProperties} properties`);
  for (const k of keys) {
    const at = `${path}.${k}`;
    const matched = patterns.filter(([re]) => re.test(k));
    if (Object.hasOwn(props, k)) errors.push(...check(props[k], obj[k], at, w));
    for (const [, sch] of matched) errors.push(...check(sch, obj[k], at, w));
    if (Object.hasOwn(props, k) || matched.length) continue;
    if (s.additionalProperties === false) errors.push(`${at} is not allowed`);
    else if (s.additionalProperties && typeof s.additionalProperties === 'object') errors.push(...check(s.additionalProperties, obj[k], at, w));
  }
  return errors;
}
