import { parseArgs, type ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * A bench's command line, read the way a user expects of a command: `--help`
 * prints the usage, and an unknown option or a number that is not one exits 2
 * with the usage instead of a stack trace. `numeric` names the string options
 * that must be non-negative numbers (a typo in one would otherwise run the
 * bench with NaN and print nonsense).
 */
export function benchArgs<O extends Options>(usage: string, options: O, numeric: readonly (keyof O & string)[] = []): ReturnType<typeof parseArgs<{ options: O }>>['values'] {
  let values: Record<string, unknown>;
  try {
    values = parseArgs({ options: { ...options, help: { type: 'boolean', default: false } } }).values;
  } catch (err) {
    return fail((err as Error).message, usage);
  }
  if (values.help) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  for (const name of numeric) {
    const v = values[name];
    if (typeof v === 'string' && !(Number(v) >= 0)) return fail(`--${name} must be a number, not ${JSON.stringify(v)}`, usage);
  }
  return values as ReturnType<typeof parseArgs<{ options: O }>>['values'];
}

function fail(message: string, usage: string): never {
  process.stderr.write(`${message}\n${usage}\n`);
  process.exit(2);
}
