import { NotFoundError } from '../../../../domain/errors.js';
import { scheduleRunView, scheduleView, type ScheduleDoc } from '../../../../domain/schedule.js';
import { createSchedule, deleteSchedule, scheduleOr404, updateSchedule, type ScheduleInput, type SchedulePorts } from '../../../../app/schedules/manage-schedules.js';
import { checkUserMessage } from '../../../../app/sessions/send-user-message.js';
import { nextRunAt } from '../../../../lib/schedules/cron.js';
import type { ScheduleChange } from '../../../../store/schedules.js';
import type { AppDeps } from '../../deps.js';
import { listResponse, pageOf, requestedPage } from '../../pagination.js';
import { requireAuth, type RouteSpec } from '../../types.js';
import { createScheduleBody, patchScheduleBody, scheduleResponse, scheduleRunResponse } from './schema.js';

const view = (s: ScheduleDoc, agentDeleted: boolean) => scheduleView(s, nextRunAt(s.cron, s.timezone), agentDeleted);

/** Schedules (issue #33): cron ticks that each open a session from a template and send it a message. */
export function scheduleRoutes(deps: AppDeps): RouteSpec[] {
  const ports: SchedulePorts = {
    schedules: deps.stores.schedules,
    clock: deps.scheduleClock,
    minIntervalMs: deps.config.scheduleMinIntervalMs,
    agentState: async (orgId, agentId) => {
      const agent = await deps.stores.agents.get(orgId, agentId);
      return !agent ? null : agent.deleted_at ? 'deleted' : 'live';
    },
    checkRefs: async (orgId, message, session) => {
      if (message) await checkUserMessage(deps.stores.files, orgId, { content: message.content, param: 'message.content' });
      const bindingId = session?.storage_binding_id;
      if (bindingId && !(await deps.stores.storageBindings.live(orgId, bindingId))) throw new NotFoundError('storage_binding', bindingId);
    },
  };
  return [
    {
      method: 'POST',
      path: '/v1/agents/{agent_id}/schedules',
      summary: 'Create a schedule: at each cron tick, a new session from `session` is opened and sent `message`.',
      tag: 'schedules',
      body: { schema: createScheduleBody },
      response: scheduleResponse,
      status: 201,
      handler: async (ctx) => view(await createSchedule(ports, requireAuth(ctx).orgId, ctx.params.agent_id, ctx.state.body as ScheduleInput), false),
    },
    {
      method: 'GET',
      path: '/v1/agents/{agent_id}/schedules',
      summary: 'List the agent’s schedules, oldest first; a deleted agent’s read paused with paused_reason agent_deleted.',
      tag: 'schedules',
      response: listResponse('schedules', scheduleResponse),
      list: { cursor: 'schedule' },
      handler: async (ctx) => {
        const orgId = requireAuth(ctx).orgId;
        const state = await ports.agentState(orgId, ctx.params.agent_id);
        if (!state) throw new NotFoundError('agent', ctx.params.agent_id);
        const page = requestedPage(ctx);
        const rows = await deps.stores.schedules.listByAgent(orgId, ctx.params.agent_id, page.limit, page.after);
        const { items, has_more, next_cursor } = pageOf(rows, page.limit, (s) => s._id);
        return { schedules: items.map((s) => view(s, state === 'deleted')), has_more, next_cursor };
      },
    },
    {
      method: 'GET',
      path: '/v1/schedules/{schedule_id}',
      summary: 'Read a schedule; a deleted agent’s reads paused with paused_reason agent_deleted.',
      tag: 'schedules',
      response: scheduleResponse,
      handler: async (ctx) => {
        const orgId = requireAuth(ctx).orgId;
        const s = await scheduleOr404(deps.stores.schedules, orgId, ctx.params.schedule_id);
        return view(s, (await ports.agentState(orgId, s.agent_id)) !== 'live');
      },
    },
    {
      method: 'PATCH',
      path: '/v1/schedules/{schedule_id}',
      summary: 'Pause or resume a schedule, or change its cron, time zone or message; 409 agent_deleted when its agent was deleted.',
      tag: 'schedules',
      body: { schema: patchScheduleBody },
      response: scheduleResponse,
      errors: [409],
      handler: async (ctx) => view(await updateSchedule(ports, requireAuth(ctx).orgId, ctx.params.schedule_id, ctx.state.body as ScheduleChange), false),
    },
    {
      method: 'DELETE',
      path: '/v1/schedules/{schedule_id}',
      summary: 'Delete a schedule and its run records; sessions its ticks opened stay.',
      tag: 'schedules',
      status: 204,
      handler: async (ctx) => {
        await deleteSchedule(ports, requireAuth(ctx).orgId, ctx.params.schedule_id);
        return undefined;
      },
    },
    {
      method: 'GET',
      path: '/v1/schedules/{schedule_id}/runs',
      summary: 'The schedule’s ticks, newest first; `after` is the next_cursor of the page before.',
      tag: 'schedules',
      response: listResponse('runs', scheduleRunResponse),
      list: { cursor: 'sequence' },
      handler: async (ctx) => {
        const orgId = requireAuth(ctx).orgId;
        const schedule = await scheduleOr404(deps.stores.schedules, orgId, ctx.params.schedule_id);
        const page = requestedPage(ctx);
        const rows = await deps.stores.schedules.listRuns(orgId, schedule._id, page.limit, page.after === null ? null : Number(page.after));
        const { items, has_more, next_cursor } = pageOf(rows, page.limit, (r) => String(r.scheduled_for.getTime()));
        return { runs: items.map(scheduleRunView), has_more, next_cursor };
      },
    },
  ];
}
