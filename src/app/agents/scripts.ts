import { InvalidRequestError } from '../../domain/errors.js';
import { check, type JsonSchema } from '../../lib/schemas/validator.js';
import type { Manifest, Script } from '../../domain/agent.js';
import { parseJsonFile, type ArchiveReader } from './tool-definitions.js';

/** DESIGN §8 scripted model file: each model call consumes the next turn. */
export const scriptSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['turns'],
  properties: {
    turns: {
      type: 'array',
      minItems: 1,
      maxItems: 10_000,
      items: {
        oneOf: [
          { type: 'object', additionalProperties: false, required: ['text'], properties: { text: { type: 'string' } } },
          {
            type: 'object',
            additionalProperties: false,
            required: ['tool_calls'],
            properties: {
              tool_calls: {
                type: 'array',
                minItems: 1,
                maxItems: 64,
                items: {
                  type: 'object',
                  additionalProperties: false,
                  required: ['name', 'arguments'],
                  properties: { name: { type: 'string', minLength: 1 }, arguments: { type: 'object' }, id: { type: 'string', minLength: 1, maxLength: 128 } },
                },
              },
            },
          },
        ],
      },
    },
  },
};

/** Parses the script of every `scripted` LLM option; a call to a tool the manifest does not declare is refused now, not mid-turn. */
export async function loadScripts(m: Manifest, read: ArchiveReader, remoteTools: readonly string[] = []): Promise<Record<string, Script>> {
  const scripted = m.llm_options.map((o, i) => ({ o, i })).filter(({ o }) => o.provider === 'scripted');
  const files = await read.read(scripted.map(({ o }) => o.script!));
  // remoteTools: the MCP servers' tools, as listed at this publish.
  const tools = new Set([...m.custom_tools.map((t) => t.name), ...remoteTools]);
  const out: Record<string, Script> = {};
  for (const { o, i } of scripted) {
    const param = `manifest.llm_options[${i}].script`;
    const script = check<Script>(scriptSchema, parseJsonFile(o.script!, files.get(o.script!), param, 'invalid_script'), o.script!);
    script.turns.forEach((turn, n) => {
      if (!('tool_calls' in turn)) return;
      for (const call of turn.tool_calls) {
        if (!tools.has(call.name)) throw new InvalidRequestError(`${o.script} turn ${n} calls tool ${call.name}, which the manifest does not declare.`, param, 'invalid_script');
      }
    });
    out[o.id] = script;
  }
  return out;
}
