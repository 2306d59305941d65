import { createAjv, usableUserSchema, type JsonSchema } from '../../src/lib/schemas/validator.js';

/** Only for formatting errors; compiling goes through the shared factory, as at publish. */
const text = createAjv('user');

/** Null when the arguments fit the tool's input schema (or it has none); else what is wrong, for the model. */
export function checkArguments(schema: JsonSchema | null, args: unknown): string | null {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return 'arguments do not match input_schema: arguments must be an object';
  if (!schema) return null;
  const validate = usableUserSchema(schema);
  if (typeof validate === 'string') return `arguments cannot be checked against input_schema: ${validate}`;
  if (validate(args)) return null;
  const detail = text.errorsText(validate.errors, { dataVar: 'arguments', separator: '; ' });
  return `arguments do not match input_schema: ${detail}`;
}
