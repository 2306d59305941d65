import { createAjv } from '../../src/schemas/validator.js';

type Doc = { components: { schemas: Record<string, unknown> } };

/**
 * Checks values against the named components of an OpenAPI document (as the
 * server serves it), with the project's one Ajv factory: `$ref`s between
 * components resolve as they do for any reader of the document.
 */
export function componentValidator(doc: Doc): (component: string, value: unknown) => string | null {
  const ajv = createAjv('api');
  // The wrapper's only keyword: where the `#/components/schemas/...` refs point.
  ajv.addKeyword({ keyword: 'components' });
  ajv.addSchema({ $id: 'troupe-openapi', components: doc.components });
  return (component, value) => {
    const validate = ajv.getSchema(`troupe-openapi#/components/schemas/${component}`);
    if (!validate) throw new Error(`no component ${component} in the document`);
    if (validate(value)) return null;
    return (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`).join('; ');
  };
}
