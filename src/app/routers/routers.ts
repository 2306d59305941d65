import { InvalidRequestError, NotFoundError } from '../../domain/errors.js';
import { PROVIDER_SPECS, providersWith } from '../../domain/providers.js';
import { checkModelEndpoint, type ModelEndpointGuard } from '../../lib/net/model-endpoint.js';
import type { RouterDoc } from '../../domain/views/router.js';
import type { RouterInput } from '../../store/routers.js';
import type { Stores } from '../../store/stores.js';

/**
 * The model-router use cases behind `/v1/routers/{id}` (DESIGN §8). The id
 * arrives already checked by the route (it is part of the path's grammar);
 * each use case throws the domain error the client sees.
 */
export interface RouterServicePorts {
  stores: { routers: Pick<Stores['routers'], 'put'>; credentials: Pick<Stores['credentials'], 'stored'> };
  /** Which `base_url`s a candidate may name. */
  models: ModelEndpointGuard;
}

/** Each candidate model once, its credential stored, its options ones its provider has, its endpoint allowed; the first failure in candidate order wins. */
async function checkCandidates(ports: RouterServicePorts, orgId: string, input: RouterInput): Promise<void> {
  const seen = new Set<string>();
  const stored = await ports.stores.credentials.stored(orgId, input.candidates.map((c) => c.api_key_credential));
  for (const [i, c] of input.candidates.entries()) {
    if (seen.has(c.model)) throw new InvalidRequestError(`candidates[${i}].model repeats ${c.model}; each candidate model appears once.`, `candidates[${i}].model`, 'duplicate_candidate');
    seen.add(c.model);
    if (!stored.has(c.api_key_credential)) {
      throw new InvalidRequestError(`candidates[${i}].api_key_credential names ${c.api_key_credential}, which is not a stored credential; PUT /v1/credentials/${c.api_key_credential} first.`, `candidates[${i}].api_key_credential`, 'unknown_credential');
    }
    if (c.configuration_update && !PROVIDER_SPECS[c.provider].capabilities.configurationUpdate) {
      throw new InvalidRequestError(`candidates[${i}].configuration_update applies to ${providersWith('configurationUpdate').join(', ')} models only.`, `candidates[${i}].configuration_update`);
    }
    if (c.thinking_mode && !PROVIDER_SPECS[c.provider].capabilities.thinkingMode) {
      throw new InvalidRequestError(`candidates[${i}].thinking_mode applies to ${providersWith('thinkingMode').join(', ')} models only.`, `candidates[${i}].thinking_mode`);
    }
    if (c.base_url) await checkModelEndpoint(c.base_url, `candidates[${i}].base_url`, ports.models);
  }
}

/** `PUT /v1/routers/{id}`: create or replace, once every candidate passes. */
export async function putRouter(ports: RouterServicePorts, orgId: string, id: string, input: RouterInput): Promise<RouterDoc> {
  await checkCandidates(ports, orgId, input);
  return ports.stores.routers.put(orgId, id, input);
}

export async function readRouter(routers: Pick<Stores['routers'], 'get'>, orgId: string, id: string): Promise<RouterDoc> {
  const doc = await routers.get(orgId, id);
  if (!doc) throw new NotFoundError('router', id);
  return doc;
}

export async function deleteRouter(routers: Pick<Stores['routers'], 'delete'>, orgId: string, id: string): Promise<void> {
  if (!(await routers.delete(orgId, id))) throw new NotFoundError('router', id);
}
