import type { Resolver } from './resolver.js';
import { validateWebhookUrl } from './url-guard.js';

/** TROUPE_MODELS_ALLOW_PRIVATE, and the resolver tests inject. */
export interface ModelEndpointGuard {
  allowPrivate: boolean;
  resolver?: Resolver;
}

/**
 * A model endpoint (an LLM option's or a router candidate's `base_url`) gets
 * the webhook URL rules: Troupe sends the caller's provider key there, so it
 * must not be able to reach our own network. Checked when the endpoint is
 * saved and again before each call (DNS may have changed since).
 */
export async function checkModelEndpoint(raw: string, param: string, guard: ModelEndpointGuard): Promise<void> {
  await validateWebhookUrl(raw, { allowPrivate: guard.allowPrivate, resolver: guard.resolver, param, codeStem: 'base_url' });
}
