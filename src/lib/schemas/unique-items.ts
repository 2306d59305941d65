import type { KeywordDefinition } from 'ajv';

/** A JSON value written with its object keys sorted: two values are deep-equal exactly when these are equal. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

/**
 * `uniqueItems` for tenant schemas in time linear in the array's size. Ajv's own compares every pair of items
 * unless the schema declares them scalars: a result of 300,000 `{}` under `{"uniqueItems": true}` is 4.5e10
 * comparisons, a frozen process. Here each item is written once in canonical form and looked up in a map.
 */
export const linearUniqueItems: KeywordDefinition = {
  keyword: 'uniqueItems',
  type: 'array',
  schemaType: 'boolean',
  errors: true,
  validate: function unique(schema: boolean, data: unknown[]): boolean {
    if (!schema) return true;
    const seen = new Map<string, number>();
    for (let i = 0; i < data.length; i++) {
      const key = canonical(data[i]);
      const j = seen.get(key);
      if (j !== undefined) {
        (unique as { errors?: unknown[] }).errors = [{ keyword: 'uniqueItems', message: `must NOT have duplicate items (items ## ${j} and ${i} are identical)`, params: { i, j } }];
        return false;
      }
      seen.set(key, i);
    }
    return true;
  },
};
