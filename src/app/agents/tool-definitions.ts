import { InvalidRequestError } from '../../domain/errors.js';
import { JsonTooDeepError, MAX_JSON_DEPTH } from '../../domain/json-depth.js';
import { parseWellFormed } from '../../domain/well-formed.js';
import { TenantPatternError } from '../../lib/schemas/tenant-regexp.js';
import { check, compileUserSchema, type JsonSchema } from '../../lib/schemas/validator.js';
import type { Manifest, ManifestTool, ToolDef } from '../../domain/agent.js';
import { dirname, resolveInside } from '../../lib/archive/paths.js';

/** The archive as publish sees it: which files exist, and the contents of the few it must parse. */
export interface ArchiveReader {
  isFile(path: string): boolean;
  /** Contents by path; null for a path that is not a regular file in the archive. */
  read(paths: string[]): Promise<Map<string, Buffer | null>>;
}

interface DefinitionFile {
  name: string;
  description: string;
  input_schema: string;
  output_schema?: string;
}

const definitionSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'description', 'input_schema'],
  properties: {
    name: { type: 'string', minLength: 1 },
    description: { type: 'string', minLength: 1, maxLength: 10_000 },
    input_schema: { type: 'string', minLength: 1, maxLength: 1024, description: 'Path of the input JSON Schema file, relative to this file.' },
    output_schema: { type: 'string', minLength: 1, maxLength: 1024, description: 'Path of the output JSON Schema file, relative to this file.' },
  },
};

/** An archive's JSON file, its strings well formed like a request body's (src/domain/well-formed.ts). */
export function parseJsonFile(path: string, bytes: Buffer | null | undefined, param: string, code = 'invalid_tool_definition'): unknown {
  if (!bytes) throw new InvalidRequestError(`The archive has no file ${path}.`, param, 'archive_missing_file');
  let value: unknown;
  try {
    value = parseWellFormed(bytes.toString('utf8'), MAX_JSON_DEPTH);
  } catch (e) {
    if (e instanceof JsonTooDeepError) throw new InvalidRequestError(`${path} ${e.message}.`, param, code);
    throw new InvalidRequestError(`${path} is not valid JSON: ${(e as Error).message}`, param, code);
  }
  return value;
}

/**
 * The largest tool schema file publish takes. Compiling a schema makes code in proportion to it, and every turn
 * of every session of the version judges values with it: a tool's schema is a few kilobytes, and 256 KiB leaves
 * room for generated ones while keeping a tenant from making a shared process compile megabytes.
 */
export const TOOL_SCHEMA_MAX_BYTES = 256 * 1024;

/**
 * Compiles a tool's JSON Schema once, at publish, so a broken schema is a 400
 * now rather than a failed turn later; turns judge it with the same Ajv
 * options (compileUserSchema). A pattern the linear-time engine cannot run
 * (backreferences, lookaround) is refused here, naming the tool and the pattern.
 */
export function compileToolSchema(schema: unknown, path: string, param: string, mustBeObject: boolean, tool?: string): Record<string, unknown> {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    throw new InvalidRequestError(`${path} must hold a JSON Schema object.`, param, 'invalid_tool_schema');
  }
  if (mustBeObject && (schema as { type?: unknown }).type !== 'object') {
    throw new InvalidRequestError(`${path}: an input schema must have "type": "object" (tool arguments are an object).`, param, 'invalid_tool_schema');
  }
  try {
    compileUserSchema(schema as JsonSchema);
  } catch (e) {
    const of = tool === undefined ? path : `${path} (tool ${JSON.stringify(tool)})`;
    if (e instanceof TenantPatternError) throw new InvalidRequestError(`${of}: ${e.message}. Use a pattern without backreferences or lookaround.`, param, 'invalid_tool_schema');
    throw new InvalidRequestError(`${of} is not a valid JSON Schema: ${(e as Error).message}`, param, 'invalid_tool_schema');
  }
  return schema as Record<string, unknown>;
}

function schemaFile(path: string, bytes: Buffer | null | undefined, param: string): unknown {
  if (bytes && bytes.length > TOOL_SCHEMA_MAX_BYTES) {
    throw new InvalidRequestError(`${path} is ${bytes.length} bytes; a tool schema may be at most ${TOOL_SCHEMA_MAX_BYTES}.`, param, 'invalid_tool_schema');
  }
  return parseJsonFile(path, bytes, param);
}

async function describe(defPath: string, tool: ManifestTool, param: string, read: ArchiveReader): Promise<Pick<ToolDef, 'description' | 'input_schema' | 'output_schema'>> {
  const def = check<DefinitionFile>(definitionSchema, parseJsonFile(defPath, (await read.read([defPath])).get(defPath), param), defPath);
  if (def.name !== tool.name) {
    throw new InvalidRequestError(`${defPath} defines tool ${JSON.stringify(def.name)} but the manifest calls it ${JSON.stringify(tool.name)}.`, param, 'invalid_tool_definition');
  }
  const refs = [def.input_schema, def.output_schema].map((ref) => {
    if (ref === undefined) return undefined;
    const p = resolveInside(dirname(defPath), ref);
    if (!p) throw new InvalidRequestError(`${defPath} refers to ${ref}, which is outside the archive.`, param, 'invalid_tool_definition');
    return p;
  });
  const files = await read.read(refs.filter((r): r is string => r !== undefined));
  const [input, output] = refs.map((p, i) => (p === undefined ? null : compileToolSchema(schemaFile(p, files.get(p), param), p, param, i === 0, tool.name)));
  return { description: def.description, input_schema: input, output_schema: output };
}

/**
 * Turns the manifest's tools into what a turn needs. External tools are read
 * from their definition files; custom tools from their optional definition.
 * Every referenced file must be in the archive.
 */
export async function compileTools(m: Manifest, read: ArchiveReader): Promise<ToolDef[]> {
  const out: ToolDef[] = [];
  for (const [i, t] of m.custom_tools.entries()) {
    const param = `manifest.custom_tools[${i}]`;
    if (!read.isFile(t.path)) throw new InvalidRequestError(`The archive has no file ${t.path} for tool ${t.name}.`, `${param}.path`, 'archive_missing_file');
    const base: ToolDef = { name: t.name, kind: t.kind, path: t.path, timeout_seconds: t.timeout_seconds, description: null, input_schema: null, output_schema: null, ...(t.permission ? { permission: t.permission } : {}) };
    const defPath = t.kind === 'external' ? t.path : t.definition;
    out.push(defPath === undefined ? base : { ...base, ...(await describe(defPath, t, param, read)) });
  }
  return out;
}
