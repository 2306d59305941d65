import type { JsonSchema } from '../../../../lib/schemas/validator.js';
import { nullableString, time } from '../../../../lib/schemas/common.js';

/** Largest archive a snapshot may reserve; the unpacked archive is capped separately at inspection. */
export const MAX_SNAPSHOT_BYTES = 100 * 1024 * 1024;

export const reserveBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['format', 'sha256', 'size_bytes'],
  properties: {
    format: { type: 'string', enum: ['tar.gz'], description: 'Archive format; only tar.gz.' },
    sha256: { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'Lowercase hex SHA-256 of the archive bytes.' },
    size_bytes: { type: 'integer', minimum: 1, maximum: MAX_SNAPSHOT_BYTES, description: 'Exact archive size in bytes.' },
    metadata: {
      type: 'object',
      maxProperties: 50,
      propertyNames: { maxLength: 128 },
      additionalProperties: { anyOf: [{ type: 'string', maxLength: 1000 }, { type: 'number' }, { type: 'boolean' }] },
      description: 'Audit data, such as a commit id or CI run id.',
    },
  },
};

const status = { type: 'string', enum: ['pending_upload', 'ready', 'failed'] };

export const reservationResponse: JsonSchema = {
  type: 'object',
  required: ['source_snapshot_id', 'upload_url', 'upload_headers', 'expires_at', 'status'],
  properties: {
    source_snapshot_id: { type: 'string' },
    upload_url: { type: 'string', description: 'PUT the archive here, exactly as given.' },
    upload_headers: { type: 'object', additionalProperties: { type: 'string' }, description: 'Send these headers with the upload.' },
    expires_at: time,
    status,
  },
};

export const snapshotResponse: JsonSchema = {
  type: 'object',
  required: ['source_snapshot_id', 'status', 'failure_reason'],
  properties: {
    source_snapshot_id: { type: 'string' },
    status,
    failure_reason: nullableString,
    format: { type: 'string' },
    sha256: { type: 'string' },
    size_bytes: { type: 'integer' },
    metadata: { type: 'object' },
    expires_at: time,
    created_at: time,
  },
};

export const uploadResponse: JsonSchema = {
  type: 'object',
  required: ['source_snapshot_id', 'status', 'received_bytes', 'sha256'],
  properties: { source_snapshot_id: { type: 'string' }, status, received_bytes: { type: 'integer' }, sha256: { type: 'string' } },
};
