import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One case of the `{{tool.field}}` placeholder contract (sdks/fixtures/placeholders.json). */
export interface PlaceholderCase {
  name: string;
  /** The run's tool results in order: [tool name, result]. */
  results: [string, unknown][];
  template: unknown;
  expected: unknown;
}

/** The shared cases, read from the source tree (dist/test/support is three folders below it). */
export const PLACEHOLDER_CASES = (JSON.parse(readFileSync(join(__dirname, '../../../sdks/fixtures/placeholders.json'), 'utf8')) as { cases: PlaceholderCase[] }).cases;
