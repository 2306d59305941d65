import { manifestSchema } from '../../../../app/agents/manifest.js';
import type { JsonSchema } from '../../../../lib/schemas/validator.js';
import { nullableString, time } from '../../../../lib/schemas/common.js';
import { listResponse } from '../../pagination.js';
import { nameString } from '../../../../lib/schemas/common.js';

const source: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'source_snapshot_id'],
  properties: {
    type: { type: 'string', enum: ['upload'], description: 'Only uploaded snapshots.' },
    source_snapshot_id: { type: 'string', minLength: 1, maxLength: 64, description: 'A ready source snapshot.' },
  },
};

// The schema publish checks the manifest by, so the document shows every field and rule a manifest must meet.
const manifest: JsonSchema = { ...manifestSchema, description: 'The manifest (troupe.json contents); authoritative over the archive copy. See docs/agents.md.' };

export const createAgentBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'manifest', 'source'],
  properties: { name: { ...nameString(200), minLength: 1 }, manifest, source },
};

export const publishVersionBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['manifest', 'source'],
  properties: { manifest, source, activate: { type: 'boolean', default: true, description: 'Make the new version active (default true).' } },
};

export const agentResponse: JsonSchema = {
  type: 'object',
  required: ['id', 'name', 'agent_url', 'active_version_id', 'created_at'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    agent_url: { type: 'string' },
    active_version_id: nullableString,
    created_at: time,
    deleted_at: { type: 'string', format: 'date-time', description: 'Present only after soft deletion.' },
  },
};

export const versionResponse: JsonSchema = {
  type: 'object',
  required: ['id', 'agent_id', 'number', 'source_snapshot_id', 'active', 'manifest', 'tools', 'created_at'],
  properties: {
    id: { type: 'string' },
    agent_id: { type: 'string' },
    number: { type: 'integer' },
    source_snapshot_id: { type: 'string' },
    active: { type: 'boolean' },
    entrypoint: { type: 'string' },
    manifest: { type: 'object' },
    llm_ids: { type: 'array', items: { type: 'string' } },
    tools: { type: 'array', items: { type: 'object' } },
    created_at: time,
  },
};


export const agentListResponse: JsonSchema = listResponse('agents', agentResponse);
export const versionListResponse: JsonSchema = listResponse('versions', versionResponse);
