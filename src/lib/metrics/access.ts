import { createHash, timingSafeEqual } from 'node:crypto';
import { AuthenticationError, TroupeError, ErrorType } from '../../domain/errors.js';

/** Who may read `/metrics` (docs/decisions.md "Metrics exposure"). */
export interface MetricsAccess {
  /** METRICS_TOKEN: when set, every listener's /metrics needs `Authorization: Bearer <it>`. */
  readonly token: string | null;
  /**
   * Whether the public web and router ports serve /metrics at all: outside production, or with METRICS_PUBLIC=1, or
   * with a token. METRICS_PORT (a worker's or webhooks process's own listener) always does: operators keep it private.
   */
  readonly onPublicPorts: boolean;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * Why this request may not read /metrics, or null when it may. `publicPort`: the web or router listener. A 404 where
 * metrics are not served (as if the route did not exist), a 401 for a missing or wrong token.
 */
export function metricsRefusal(access: MetricsAccess, authorization: string | undefined, publicPort: boolean): TroupeError | null {
  if (publicPort && !access.onPublicPorts) {
    return new TroupeError(404, ErrorType.notFound, 'route_not_found', 'No route for GET /metrics: in production it is served on this port only with METRICS_TOKEN or METRICS_PUBLIC=1.');
  }
  if (access.token === null) return null;
  const given = /^Bearer (.+)$/.exec(authorization ?? '')?.[1] ?? '';
  // Hashes first: equal lengths for the constant-time comparison, whatever was sent.
  if (timingSafeEqual(digest(given), digest(access.token))) return null;
  return new AuthenticationError('/metrics needs Authorization: Bearer <METRICS_TOKEN>.', 'invalid_metrics_token');
}
