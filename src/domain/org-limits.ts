/** Request rates (per minute) and the running-session cap; 0 means unlimited. */
export interface OrgLimits {
  readonly api_per_min: number;
  readonly api_key_per_min: number;
  readonly routing_per_min: number;
  readonly routing_key_per_min: number;
  readonly running_sessions: number;
  /** Routing-interface tokens (input + output) per minute, the operator's ceiling per org and per routing key; absent or 0 = unlimited. */
  readonly routing_tokens_per_min?: number;
  readonly routing_key_tokens_per_min?: number;
}
