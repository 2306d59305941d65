import { createAjv } from '../../src/lib/schemas/validator.js';

type Doc = { components: { schemas: Record<string, unknown> } };
type Discriminated = { discriminator?: { propertyName: string; mapping?: Record<string, string> }; oneOf?: { $ref?: string }[] };

/**
 * Each discriminator's `mapping`, checked against the variants it names and
 * then dropped: Ajv refuses the keyword, and picks the variant by the same
 * property's `const` in each, which this check has just shown agree.
 */
function withoutMappings(components: Doc['components']): Doc['components'] {
  const schemas: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(components.schemas)) {
    const d = (schema as Discriminated).discriminator;
    if (!d?.mapping) {
      schemas[name] = schema;
      continue;
    }
    for (const [value, ref] of Object.entries(d.mapping)) {
      const target = components.schemas[ref.split('/').pop()!] as { properties?: Record<string, { const?: unknown }> } | undefined;
      if (target?.properties?.[d.propertyName]?.const !== value) throw new Error(`${name}: mapping ${value} -> ${ref} does not match that schema's ${d.propertyName}`);
    }
    const refs = (schema as Discriminated).oneOf?.map((v) => v.$ref).sort();
    if (JSON.stringify(refs) !== JSON.stringify(Object.values(d.mapping).sort())) throw new Error(`${name}: the mapping and oneOf name different schemas`);
    schemas[name] = { ...(schema as object), discriminator: { propertyName: d.propertyName } };
  }
  return { ...components, schemas };
}

/**
 * Checks values against the named components of an OpenAPI document (as the
 * server serves it), with the project's one Ajv factory: `$ref`s between
 * components resolve as they do for any reader of the document.
 */
export function componentValidator(doc: Doc): (component: string, value: unknown) => string | null {
  const ajv = createAjv('api');
  // The wrapper's only keyword: where the `#/components/schemas/...` refs point.
  ajv.addKeyword({ keyword: 'components' });
  ajv.addSchema({ $id: 'troupe-openapi', components: withoutMappings(doc.components) });
  return (component, value) => {
    const validate = ajv.getSchema(`troupe-openapi#/components/schemas/${component}`);
    if (!validate) throw new Error(`no component ${component} in the document`);
    if (validate(value)) return null;
    return (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`).join('; ');
  };
}
