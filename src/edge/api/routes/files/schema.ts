import type { JsonSchema } from '../../../../lib/schemas/validator.js';
import { time } from '../../../../lib/schemas/common.js';
import { listResponse } from '../../pagination.js';

export const fileResponse: JsonSchema = {
  type: 'object',
  required: ['id', 'filename', 'size_bytes', 'content_type', 'created_at'],
  properties: {
    id: { type: 'string' },
    filename: { type: 'string', description: 'Leaf name; path components are stripped.' },
    size_bytes: { type: 'integer' },
    content_type: { type: 'string' },
    created_at: time,
  },
};

export const fileListResponse: JsonSchema = listResponse('files', fileResponse);

/** The upload form, for the document: the handler reads the "file" part itself and ignores any other part. */
export const uploadFileForm: JsonSchema = {
  type: 'object',
  required: ['file'],
  properties: { file: { type: 'string', format: 'binary', contentMediaType: 'application/octet-stream', description: 'The file, sent as a file part (with a filename).' } },
};
