import assert from 'node:assert/strict';
import { InvalidRequestError } from '../../src/domain/errors.js';
import { agentContext } from '../../src/app/sessions/agent-context.js';
import { checkArguments } from '../../actors/tool-runner/input-check.js';
import { compileToolSchema } from '../../src/app/agents/tool-definitions.js';
import { check, createAjv } from '../../src/lib/schemas/validator.js';
import type { AgentVersionDoc } from '../../src/store/agents.js';
import type { ToolDef } from '../../src/domain/agent.js';
import type { SessionDoc } from '../../src/domain/views/session.js';

const schema = {
  type: 'object',
  additionalProperties: false,
  required: ['items'],
  properties: {
    items: { type: 'array', items: { type: 'object', required: ['agent_id'], properties: { agent_id: { type: 'string' } } } },
    format: { enum: ['tar.gz'] },
  },
};

describe('check', () => {
  it('names the offending field in param', () => {
    assert.throws(
      () => check(schema, { items: [{ agent_id: 'a' }, {}] }),
      (e: unknown) => e instanceof InvalidRequestError && e.param === 'items[1].agent_id' && /is required/.test(e.message),
    );
    assert.throws(() => check(schema, { items: [], extra: 1 }), (e: unknown) => e instanceof InvalidRequestError && e.param === 'extra');
    assert.throws(() => check(schema, { items: [], format: 'zip' }), /format must be one of: "tar.gz"/);
  });

  it('tells a string-or-array union by the array branch when an array came: the error inside it, not "must be string"', () => {
    const union = {
      type: 'object',
      properties: {
        content: { anyOf: [{ type: 'string' }, { type: 'array', minItems: 1, items: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } } }] },
        note: { anyOf: [{ type: 'string' }, { type: 'null' }] },
      },
    };
    const fails = (value: unknown, param: string, message: string) =>
      assert.throws(() => check(union, value), (e: unknown) => e instanceof InvalidRequestError && e.param === param && e.message === message);
    fails({ content: 42 }, 'content', 'content must be string or array.');
    fails({ note: 1 }, 'note', 'note must be string or null.');
    fails({ content: [{ type: 'text' }, null] }, 'content[1]', 'content[1] must be object.');
    fails({ content: [{}] }, 'content[0].type', 'content[0].type is required.');
    fails({ content: [] }, 'content', 'content must NOT have fewer than 1 items.');
  });

  it('returns valid input unchanged', () => {
    assert.deepEqual(check(schema, { items: [] }), { items: [] });
  });
});

describe('user schemas: publish and turn judge them alike', () => {
  // Common in the wild, refused by Ajv's strict mode: a schema with "example".
  const output = { type: 'object', required: ['temp'], properties: { temp: { type: 'number', example: 21.5 } }, example: { temp: 3 } };
  const tool: ToolDef = { name: 'forecast', kind: 'external', path: 't.json', timeout_seconds: 5, description: null, input_schema: { type: 'object' }, output_schema: output };
  const doc = { _id: 'ses_1', org_id: 'org_1', agent_id: 'agt_1', batch_id: null } as unknown as SessionDoc;
  const version = { tools: [tool], agent_config: null } as unknown as AgentVersionDoc;

  it('the strict API validator would refuse it (why one factory matters)', () => {
    assert.throws(() => createAjv('api').compile(output), /strict mode/);
  });

  it('publish accepts an output_schema with "example"', () => {
    assert.deepEqual(compileToolSchema(output, 'tools/forecast.output.json', 'manifest', false), output);
  });

  it('the turn validates results against it instead of failing to compile', () => {
    const agent = agentContext(doc, version, 'http://x');
    assert.equal(agent.validate_output(tool, { temp: 12 }), null);
    assert.equal(agent.validate_output(tool, { temp: 'warm' }), '/temp must be number');
    assert.equal(agent.validate_output(tool, {}), "(root) must have required property 'temp'");
  });

  it('tool arguments are checked with the same options', () => {
    assert.equal(checkArguments({ type: 'object', properties: { city: { type: 'string', example: 'Oslo' } } }, { city: 'Oslo' }), null);
  });
});

describe('check: the message names the real problem of a union or a conditional', () => {
  const block = {
    oneOf: [
      { type: 'object', additionalProperties: false, required: ['type', 'text'], properties: { type: { const: 'text' }, text: { type: 'string' } } },
      { type: 'object', additionalProperties: false, required: ['type', 'file_id'], properties: { type: { const: 'file' }, file_id: { type: 'string' } } },
    ],
  };
  const body = {
    type: 'object',
    properties: {
      content: { type: 'array', items: block },
      input: { anyOf: [{ type: 'string' }, { type: 'array' }] },
      kind: { enum: ['a', 'b'] },
      is_error: { type: 'boolean' },
      result: {},
    },
    if: { properties: { is_error: { const: true } }, required: ['is_error'] },
    else: { properties: { result: {} }, required: ['result'] },
  };
  const refusal = (value: unknown) => {
    try {
      check(body, value);
    } catch (e) {
      return [(e as InvalidRequestError).param, (e as InvalidRequestError).message];
    }
    return null;
  };

  it('a tag no branch has: the tag and its values, not the first branch’s missing field', () => {
    assert.deepEqual(refusal({ result: 1, content: [{ type: 'video' }] }), ['content[0].type', 'content[0].type must be one of: "text", "file".']);
  });

  it('a tag one branch has: that branch’s complaint', () => {
    assert.deepEqual(refusal({ result: 1, content: [{ type: 'file' }] }), ['content[0].file_id', 'content[0].file_id is required.']);
    assert.deepEqual(refusal({ result: 1, content: [{ type: 'file', file_id: 'f', text: 'x' }] }), ['content[0].text', 'content[0].text is not a recognised field.']);
    assert.deepEqual(refusal({ result: 1, content: [{ type: 'text', text: 1 }] }), ['content[0].text', 'content[0].text must be string.']);
  });

  it('a union of types: each type it may have', () => {
    assert.deepEqual(refusal({ result: 1, input: 42 }), ['input', 'input must be string or array.']);
  });

  it('a wrong value before the field a conditional then requires', () => {
    assert.deepEqual(refusal({ is_error: 'yes' }), ['is_error', 'is_error must be boolean.']);
    assert.deepEqual(refusal({ kind: 'c' }), ['kind', 'kind must be one of: "a", "b".']);
    assert.deepEqual(refusal({}), ['result', 'result is required.']);
  });
});
