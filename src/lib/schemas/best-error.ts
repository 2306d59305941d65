import type { ErrorObject } from 'ajv';

/**
 * Which of a refused value's problems (Ajv, every error listed) a client is told about. Ajv's first error is
 * often not the real one: a union reports its first branch's complaint (`{"type":"video"}` as a content block
 * was "text is required"), and a conditional its consequence before the field that decided it (`is_error:
 * "yes"` was "result is required"). So: each union is explained by the branch the value meant (the one whose
 * tag it matched, else the one it came closest to), or by its tag or its types when it meant none; `if` only
 * summarises; and a wrong value present in the input is named before a field that is missing.
 */
export function bestError(errors: ErrorObject[]): ErrorObject {
  const explained = explainUnions(errors.filter((e) => e.keyword !== 'if'));
  return explained.find((e) => e.keyword !== 'required') ?? explained[0] ?? errors[0];
}

function isUnion(e: ErrorObject): boolean {
  return e.keyword === 'oneOf' || e.keyword === 'anyOf';
}

/** Outer unions first: the branch chosen in one may hold another. */
function explainUnions(errors: ErrorObject[]): ErrorObject[] {
  let left = errors;
  const unions = errors.filter(isUnion).sort((a, b) => a.schemaPath.length - b.schemaPath.length);
  for (const union of unions) {
    if (!left.includes(union)) continue;
    const prefix = `${union.schemaPath}/`;
    const inside = left.filter((e) => e.schemaPath.startsWith(prefix));
    // No branch failed: a oneOf that more than one branch matched says so itself.
    if (inside.length === 0) continue;
    const branches = new Map<string, ErrorObject[]>();
    for (const e of inside) {
      const i = e.schemaPath.slice(prefix.length).split('/')[0];
      if (!branches.has(i)) branches.set(i, []);
      branches.get(i)!.push(e);
    }
    const kept = explainUnion(union, [...branches.values()]);
    left = left.flatMap((e) => (e === inside[0] ? kept : e === union || inside.includes(e) ? [] : [e]));
  }
  return left;
}

/** A union's failure as the errors worth showing: a type or tag it must have, or the errors of the branch meant. */
function explainUnion(union: ErrorObject, branches: ErrorObject[][]): ErrorObject[] {
  const at = union.instancePath;
  if (branches.every((b) => b.every((e) => e.keyword === 'type' && e.instancePath === at))) {
    const types = [...new Set(branches.flatMap((b) => b.map((e) => String(e.params.type).split(','))).flat())];
    return [{ ...union, keyword: 'type', params: { type: types }, message: `must be ${types.join(' or ')}` }];
  }
  const tags = branches.map((b) => tagErrors(b, at));
  const unmatched = tags.filter((t) => t.length > 0);
  if (unmatched.length === branches.length) {
    // Every branch wants another value of one field: the value meant none of them; say which it may be.
    const field = unmatched[0][0].instancePath;
    if (unmatched.every((t) => t.some((e) => e.instancePath === field))) {
      const allowed = unmatched.flatMap((t) => t.filter((e) => e.instancePath === field).flatMap((e) => (e.keyword === 'const' ? [e.params.allowedValue] : (e.params.allowedValues as unknown[]))));
      return [{ ...union, keyword: 'enum', instancePath: field, params: { allowedValues: [...new Set(allowed)] }, message: 'must be equal to one of the allowed values' }];
    }
  }
  // A branch refused only for the value's type (`string` when an array came) was not meant, when another took the type.
  const meant = branches.filter((b, i) => tags[i].length === 0 && !b.every((e) => e.keyword === 'type' && e.instancePath === at));
  const pool = meant.length ? meant : branches;
  return pool.reduce((best, b) => (b.length < best.length ? b : best));
}

/** A branch's `const`/`enum` failures on a field of the union's object: the value is not of this branch's kind. */
function tagErrors(branch: ErrorObject[], at: string): ErrorObject[] {
  return branch.filter((e) => (e.keyword === 'const' || e.keyword === 'enum') && e.instancePath.startsWith(`${at}/`) && !e.instancePath.slice(at.length + 1).includes('/'));
}
