import type { ScheduleClock } from '../../app/schedules/clock.js';
import type { RedisClient } from '../../lib/redis/connection.js';
import type { Db } from 'mongodb';
import type { RedisKeys } from '../../lib/redis/keys.js';
import type { Config } from '../../lib/config/config.js';
import type { SecretBox } from '../../lib/crypto/secret-box.js';
import type { Logger } from '../../lib/log/logger.js';
import type { Metrics } from '../../lib/metrics/metrics.js';
import type { Stores } from '../../store/stores.js';
import type { Asker } from '../../../actors/runtime/asker.js';
import type { Outbox } from '../../domain/actors/address.js';
import type { PubSubHub } from '../../lib/pubsub/hub.js';
import type { Limits } from '../../lib/limits/limits.js';
import type { Budgets } from '../../lib/budgets/budgets.js';
import type { Drain } from '../../lib/lifecycle/drain.js';
import type { SessionHeads } from '../../app/sessions/session-heads.js';
import type { StreamLedgerReads } from './sse/ledger-reads.js';
import type { McpConnector } from '../../lib/mcp/connector.js';

/** Everything the web app needs, built by the composition root (src/roles) or a test. */
export interface AppDeps {
  config: Config;
  log: Logger;
  /** For the readiness probe. */
  db: Db;
  redis: RedisClient;
  keys: RedisKeys;
  box: SecretBox;
  metrics: Metrics;
  stores: Stores;
  /** Hands messages to actors without waiting for them (batch wake-ups, webhook redeliveries). */
  outbox: Outbox;
  /** Arms and disarms schedules' job schedulers (BullMQ). */
  scheduleClock: ScheduleClock;
  /** Session actors' front door, the process's subscriber and its streams' ledger reads; present on web nodes. */
  sessionsRuntime?: { asker: Asker; hub: PubSubHub; streamReads: StreamLedgerReads };
  /** Sessions this process created or read, so commands to them skip the read; absent means always read. */
  sessionHeads?: SessionHeads;
  /** Rate limits and the running-session cap; absent means unlimited (unit tests). */
  limits?: Limits;
  /** Spend budgets; absent means none is enforced (unit tests). */
  budgets?: Budgets;
  /** Set when the process starts shutting down; absent in unit tests. */
  drain?: Drain;
  /** Lists MCP servers' tools at publish (docs/mcp.md); absent means a manifest with mcp_servers is refused. */
  mcp?: McpConnector;
  /** Extra facts for /healthz (e.g. sandbox enforcement level). */
  health?: () => Record<string, unknown>;
}
