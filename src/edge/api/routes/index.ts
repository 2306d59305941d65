import type { AppDeps } from '../deps.js';
import type { RouteSpec } from '../types.js';
import { agentRoutes } from './agents/agents.js';
import { credentialRoutes } from './credentials/credentials.js';
import { sourceSnapshotRoutes } from './source-snapshots/source-snapshots.js';
import { routerRoutes } from './routers/routers.js';
import { fileRoutes } from './files/files.js';
import { eventRoutes } from './sessions/events.js';
import { messageRoutes } from './sessions/messages.js';
import { scheduleRoutes } from './schedules/schedules.js';
import { sessionRoutes } from './sessions/sessions.js';
import { sessionBatchRoutes } from './session-batches/session-batches.js';
import { usageRoutes } from './usage/usage.js';
import { organizationRoutes } from './organization/organization.js';
import { keyRoutes } from './keys/keys.js';
import { storageBindingRoutes } from './storage-bindings/storage-bindings.js';
import { streamRoutes } from './sessions/stream.js';
import { toolCallRoutes } from './sessions/tool-calls.js';
import { systemRoutes } from './system/system.js';
import { webhookConfigRoutes } from './webhook-config/webhook-config.js';
import { webhookDeliveryRoutes } from './webhook-deliveries/webhook-deliveries.js';

/**
 * Every base-API route module, in one list. A new resource adds one line
 * here; its module lives in routes/<resource>/.
 */
export function allRoutes(deps: AppDeps): RouteSpec[] {
  const routes: RouteSpec[] = [];
  routes.push(...systemRoutes(deps, () => routes));
  routes.push(...credentialRoutes(deps), ...organizationRoutes(deps), ...keyRoutes(deps));
  routes.push(...sourceSnapshotRoutes(deps), ...agentRoutes(deps));
  routes.push(...routerRoutes(deps));
  routes.push(...fileRoutes(deps), ...storageBindingRoutes(deps));
  routes.push(...webhookConfigRoutes(deps), ...webhookDeliveryRoutes(deps));
  routes.push(...sessionRoutes(deps), ...eventRoutes(deps), ...messageRoutes(deps), ...streamRoutes(deps), ...toolCallRoutes(deps));
  routes.push(...sessionBatchRoutes(deps));
  routes.push(...scheduleRoutes(deps));
  routes.push(...usageRoutes(deps));
  return routes;
}
