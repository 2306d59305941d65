import type { JsonSchema } from '../../../../lib/schemas/validator.js';
import { time } from '../../../../lib/schemas/common.js';
import { listResponse } from '../../pagination.js';

export const CREDENTIAL_NAME = '^[A-Z_][A-Z0-9_]*$';

export const putCredentialBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['value'],
  properties: { value: { type: 'string', minLength: 1, maxLength: 65536, description: 'The secret value; stored encrypted and never returned.' } },
};

export const credentialResponse: JsonSchema = {
  type: 'object',
  required: ['name', 'created_at', 'updated_at'],
  properties: { name: { type: 'string' }, created_at: time, updated_at: time },
};

export const credentialListResponse: JsonSchema = listResponse('credentials', credentialResponse);
