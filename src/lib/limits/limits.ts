import type { RedisClient } from '../redis/connection.js';
import type { RedisKeys } from '../redis/keys.js';
import type { OrgLimits } from '../../domain/org-limits.js';
import type { Logger } from '../log/logger.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Stores } from '../../store/stores.js';
import { AuthFailureLimiter } from './auth-failures.js';
import { OrgLimitsLookup } from './org-limits.js';
import { RequestLimiter } from './request-limiter.js';
import { RunningSessionGate } from './running-sessions.js';
import { TokenLimiter } from './token-limiter.js';

/** Request rates and the running-session cap, built once per process. */
export interface Limits {
  requests: RequestLimiter;
  tokens: TokenLimiter;
  sessions: RunningSessionGate;
  authFailures: AuthFailureLimiter;
}

export function createLimits(deps: { redis: RedisClient; keys: RedisKeys; stores: Stores; metrics: Metrics; log: Logger; defaults: OrgLimits; authFailuresPerMin: number }): Limits {
  const lookup = new OrgLimitsLookup(deps.stores.orgs, deps.defaults);
  return {
    requests: new RequestLimiter(deps.redis, deps.keys, lookup, deps.metrics, deps.log),
    tokens: new TokenLimiter(deps.redis, deps.keys, lookup, deps.metrics, deps.log),
    sessions: new RunningSessionGate(deps.stores.sessions, lookup, deps.metrics),
    authFailures: new AuthFailureLimiter(deps.redis, deps.keys, deps.authFailuresPerMin, deps.metrics, deps.log),
  };
}
