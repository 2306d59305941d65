import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import nextVocabulary from 'ajv/dist/vocabularies/next.js';
import { InvalidRequestError } from '../../domain/errors.js';
import { refusedInName } from '../../domain/name-text.js';
import { bestError } from './best-error.js';
import { NO_CONTROL_CHARACTERS } from './common.js';
import { tenantRegExp } from './tenant-regexp.js';
import { linearUniqueItems } from './unique-items.js';

/** A JSON Schema as plain data; the same objects validate requests and feed /v1/openapi.json. */
export type JsonSchema = Record<string, unknown>;

/**
 * The one Ajv factory. `api`: Troupe's own request schemas, strict, so a
 * typo in them fails at start. `user`: schemas agents bring (tool input and
 * output schemas), judged leniently: strict mode refuses keywords such as
 * `example` that are common in the wild. Publish and turns both use `user`,
 * so a schema accepted at publish is never refused by a turn. `discriminator`
 * (OpenAPI's; Ajv takes it without `mapping`) lets `api` judge the document's
 * own unions, such as the ledger events by `type`. `api` also takes the 2019-09 keywords
 * (`dependentRequired`): OpenAPI 3.1 has them and not draft-07's `dependencies`, so a request
 * schema is published in the document unchanged. `allErrors`: list every problem rather than stop at the
 * first (by default off).
 *
 * `user` schemas are a tenant's, judged against a tenant's values in a shared process, so their validation is
 * bounded by more than the body limits: patterns run on RE2 (tenantRegExp: linear time; one RE2 cannot run is
 * refused when the schema compiles, i.e. at publish), `uniqueItems` is linear (linearUniqueItems), judging stops at
 * the first problem, and `$data` (schema values read from the data) stays off. Troupe's own schemas keep RegExp.
 */
export function createAjv(kind: 'api' | 'user', allErrors = false): Ajv {
  const instance =
    // verbose on the explainer (allErrors): its errors carry the refused value, so a message can name what in it was wrong.
    kind === 'api'
      ? new Ajv({ allErrors, verbose: allErrors, strict: true, coerceTypes: false, useDefaults: true, discriminator: true })
      : new Ajv({ strict: false, allErrors, $data: false, code: { regExp: tenantRegExp } });
  addFormats.default(instance);
  if (kind === 'api') instance.addVocabulary(nextVocabulary);
  else instance.removeKeyword('uniqueItems').addKeyword(linearUniqueItems);
  return instance;
}

export const ajv = createAjv('api');
/**
 * The same judge, listing every problem: it runs only on a value `ajv` has refused, to explain the refusal
 * (bestError). Valid requests never reach it, and the first-failure validator stays the fast path.
 */
const explainer = createAjv('api', true);

/** A request schema's validators: the fast one, and the explainer's, compiled the first time a value is refused. */
interface Compiled {
  validate: ValidateFunction;
  explain?: ValidateFunction;
}

const cache = new WeakMap<JsonSchema, Compiled>();
const userCache = new WeakMap<JsonSchema, ValidateFunction>();

/**
 * Compiles a user-supplied JSON Schema (throws if it is not one). Each gets an
 * Ajv of its own, so one tool's `$id` cannot collide with another's; the
 * result is cached per schema object (versions are immutable and cached).
 */
export function compileUserSchema(schema: JsonSchema): ValidateFunction {
  let fn = userCache.get(schema);
  if (!fn) {
    fn = createAjv('user').compile(schema);
    userCache.set(schema, fn);
  }
  return fn;
}

/**
 * The compiled schema, or why it cannot judge anything: a version published before patterns ran on RE2 may hold
 * one RE2 refuses. Its values are then refused with that reason rather than judged by a backtracking engine, and
 * the turn that asked is answered instead of failing (and being retried) on the throw.
 */
export function usableUserSchema(schema: JsonSchema): ValidateFunction | string {
  try {
    return compileUserSchema(schema);
  } catch (e) {
    return `the schema cannot be used: ${(e as Error).message}`;
  }
}

/** Null when `value` fits the user schema; else the first problem, as `<path> <message>`. */
export function userSchemaProblem(schema: JsonSchema, value: unknown): string | null {
  const validate = usableUserSchema(schema);
  if (typeof validate === 'string') return validate;
  if (validate(value)) return null;
  const e = validate.errors?.[0];
  return e ? `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}` : 'invalid';
}

function compiled(schema: JsonSchema): Compiled {
  let entry = cache.get(schema);
  if (!entry) {
    entry = { validate: ajv.compile(schema) };
    cache.set(schema, entry);
  }
  return entry;
}

export function compile<T>(schema: JsonSchema): (value: unknown) => value is T {
  return compiled(schema).validate as (value: unknown) => value is T;
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
    case 'pattern':
      if (err.params.pattern === NO_CONTROL_CHARACTERS) {
        const found = typeof err.data === 'string' ? refusedInName(err.data) : null;
        return `${where} contains ${found ?? 'a character names may not hold'}; names may not hold control, bidirectional or invisible characters.`;
      }
      return `${where} ${err.message ?? 'is invalid'}.`;
    default:
      return `${where} ${err.message ?? 'is invalid'}.`;
  }
}

/** Validates and returns the typed value, or throws a 400 naming the offending field (bestError). */
export function check<T>(schema: JsonSchema, value: unknown, root = ''): T {
  const entry = compiled(schema);
  if (entry.validate(value)) return value as T;
  const explain = (entry.explain ??= explainer.compile(schema));
  explain(value);
  const best = bestError(explain.errors ?? entry.validate.errors!);
  const param = paramOf(best, root);
  throw new InvalidRequestError(messageOf(best, param), param || undefined);
}
