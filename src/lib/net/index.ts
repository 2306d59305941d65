/** The SSRF guard for outbound webhook traffic: URL rules at configuration, address checks at connect. */
export { isPublicUnicast } from './ip-ranges.js';
export { systemResolver, type ResolvedAddress, type Resolver } from './resolver.js';
export { validateWebhookUrl, UnsafeUrlError, type CheckedUrl, type UrlGuardOptions } from './url-guard.js';
export { guardedLookup, AddressRefusedError, type LookupFunction } from './guarded-lookup.js';
export { checkModelEndpoint, type ModelEndpointGuard } from './model-endpoint.js';
export { vetEgress, OwnAddresses, EgressRefusal, type EgressRefusalReason, type EgressGuardOptions, type OwnEndpoint } from './egress-guard.js';
export { startEgressProxy, type EgressProxy, type EgressProxyOptions } from './egress-proxy.js';
