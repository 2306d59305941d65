import type { JsonSchema } from '../../../../lib/schemas/validator.js';
import { nullableString, time } from '../../../../lib/schemas/common.js';
import { listResponse } from '../../pagination.js';

export const createStorageBindingBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$', description: 'Unique within the organization; 1-64 of [A-Za-z0-9_.-], starting with a letter or digit.' },
    description: { type: ['string', 'null'], maxLength: 1000 },
  },
};

export const storageBindingResponse: JsonSchema = {
  type: 'object',
  required: ['id', 'name', 'description', 'file_count', 'size_bytes', 'created_at'],
  properties: {
    id: { type: 'string', description: 'sb_…' },
    name: { type: 'string' },
    description: nullableString,
    file_count: { type: 'integer' },
    size_bytes: { type: 'integer' },
    created_at: time,
  },
};

export const storageBindingListResponse: JsonSchema = listResponse('storage_bindings', storageBindingResponse);

export const storageFileListResponse: JsonSchema = listResponse('files', {
  type: 'object',
  required: ['path', 'size_bytes', 'sha256', 'updated_at'],
  properties: { path: { type: 'string' }, size_bytes: { type: 'integer' }, sha256: { type: 'string' }, updated_at: time },
});
