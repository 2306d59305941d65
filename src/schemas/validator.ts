import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { InvalidRequestError } from '../domain/errors.js';

/** A JSON Schema as plain data; the same objects validate requests and feed /v1/openapi.json. */
export type JsonSchema = Record<string, unknown>;

export const ajv = new Ajv({ allErrors: false, strict: true, coerceTypes: false, useDefaults: true });
addFormats.default(ajv);

const cache = new WeakMap<JsonSchema, ValidateFunction>();

export function compile<T>(schema: JsonSchema): (value: unknown) => value is T {
  let fn = cache.get(schema);
  if (!fn) {
    fn = ajv.compile(schema);
    cache.set(schema, fn);
  }
  return fn as (value: unknown) => value is T;
}

/** `/items/0/agent_id` → `items[0].agent_id`, the form clients see in `param`. */
function paramOf(err: ErrorObject, root: string): string {
  const segments = err.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (err.keyword === 'required') segments.push(String(err.params.missingProperty));
  if (err.keyword === 'additionalProperties') segments.push(String(err.params.additionalProperty));
  let out = root;
  for (const s of segments) out += /^\d+$/.test(s) ? `[${s}]` : out ? `.${s}` : s;
  return out;
}

function messageOf(err: ErrorObject, param: string): string {
  const where = param || 'body';
  // A propertyNames failure: name the key, which the path cannot show.
  if (err.propertyName !== undefined) return `${where} has a key ${JSON.stringify(err.propertyName)} that ${err.message ?? 'is not allowed'}.`;
  switch (err.keyword) {
    case 'required':
      return `${where} is required.`;
    case 'additionalProperties':
      return `${where} is not a recognised field.`;
    case 'enum':
      return `${where} must be one of: ${(err.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}.`;
    case 'const':
      return `${where} must be ${JSON.stringify(err.params.allowedValue)}.`;
    default:
      return `${where} ${err.message ?? 'is invalid'}.`;
  }
}

/** Validates and returns the typed value, or throws a 400 naming the first offending field. */
export function check<T>(schema: JsonSchema, value: unknown, root = ''): T {
  const validate = compile<T>(schema) as ValidateFunction;
  if (validate(value)) return value as T;
  const err = validate.errors![0];
  const param = paramOf(err, root);
  throw new InvalidRequestError(messageOf(err, param), param || undefined);
}
