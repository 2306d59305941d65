import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';

/** Same leniency as publish (tool-definitions.ts): user schemas may use keywords strict mode refuses. */
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats.default(ajv);

const MAX_CACHED = 500;
const cache = new Map<string, ValidateFunction>();

/** Compiled once per (version, tool); versions are immutable, so the key never goes stale. */
function validatorFor(key: string, schema: Record<string, unknown>): ValidateFunction {
  let fn = cache.get(key);
  if (!fn) {
    fn = ajv.compile(schema);
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
    cache.set(key, fn);
  }
  return fn;
}

/** Null when the arguments fit the tool's input schema (or it has none); else what is wrong, for the model. */
export function checkArguments(key: string, schema: Record<string, unknown> | null, args: unknown): string | null {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return 'arguments do not match input_schema: arguments must be an object';
  if (!schema) return null;
  const validate = validatorFor(key, schema);
  if (validate(args)) return null;
  const detail = ajv.errorsText(validate.errors, { dataVar: 'arguments', separator: '; ' });
  return `arguments do not match input_schema: ${detail}`;
}
