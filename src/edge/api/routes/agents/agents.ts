import type { AgentDoc, AgentVersionDoc } from '../../../../store/agents.js';
import { activateVersion, createAgent, deleteAgent, publishVersion, readAgent, readVersion, type AgentServicePorts } from '../../../../app/agents/agents.js';
import type { PublishInput } from '../../../../app/agents/publish-from-snapshot.js';
import type { AppDeps } from '../../deps.js';
import { pageOf, requestedPage } from '../../pagination.js';
import { requireAuth, type RouteSpec } from '../../types.js';
import { agentListResponse, agentResponse, createAgentBody, publishVersionBody, versionListResponse, versionResponse } from './schema.js';

export function agentView(doc: AgentDoc, publicUrl: string): Record<string, unknown> {
  const view: Record<string, unknown> = {
    id: doc._id,
    name: doc.name,
    agent_url: `${publicUrl}/v1/agents/${doc._id}`,
    active_version_id: doc.active_version_id,
    created_at: doc.created_at.toISOString(),
  };
  if (doc.deleted_at) view.deleted_at = doc.deleted_at.toISOString();
  return view;
}

export function versionView(v: AgentVersionDoc, activeId: string | null): Record<string, unknown> {
  return {
    id: v._id,
    agent_id: v.agent_id,
    number: v.number,
    source_snapshot_id: v.snapshot_id,
    active: v._id === activeId,
    entrypoint: v.entrypoint,
    manifest: v.manifest,
    llm_ids: v.llm_options.map((o) => o.id),
    tools: v.tools,
    created_at: v.created_at.toISOString(),
  };
}

/** Agents and their versions (DESIGN §6 extra endpoints). */
export function agentRoutes(deps: AppDeps): RouteSpec[] {
  const { config, stores } = deps;
  const mcp = deps.mcp && { connector: deps.mcp, reveal: (org: string, name: string) => stores.credentials.reveal(org, name) };
  const ports: AgentServicePorts = { stores, place: { sandboxDir: config.sandboxDir, models: { allowPrivate: config.modelsAllowPrivate }, mcp } };
  return [
    {
      method: 'POST',
      path: '/v1/agents',
      summary: 'Create an agent from a manifest and a ready source snapshot.',
      errors: [404, 409, 422],
      tag: 'agents',
      body: { schema: createAgentBody },
      status: 201,
      response: agentResponse,
      handler: async (ctx) => {
        const { orgId } = requireAuth(ctx);
        return agentView(await createAgent(ports, orgId, ctx.state.body as PublishInput & { name: string }), config.publicUrl);
      },
    },
    {
      method: 'GET',
      path: '/v1/agents',
      summary: 'List agents (soft-deleted ones are hidden).',
      tag: 'agents',
      list: { cursor: 'agent' },
      response: agentListResponse,
      handler: async (ctx) => {
        const { orgId } = requireAuth(ctx);
        const page = requestedPage(ctx);
        const { items, has_more, next_cursor } = pageOf(await stores.agents.list(orgId, page), page.limit, (a) => a._id);
        return { agents: items.map((a) => agentView(a, config.publicUrl)), has_more, next_cursor };
      },
    },
    {
      method: 'GET',
      path: '/v1/agents/{agent_id}',
      summary: 'Read an agent; a soft-deleted one stays readable and shows deleted_at.',
      tag: 'agents',
      response: agentResponse,
      handler: async (ctx) => agentView(await readAgent(stores.agents, requireAuth(ctx).orgId, ctx.params.agent_id), config.publicUrl),
    },
    {
      method: 'DELETE',
      path: '/v1/agents/{agent_id}',
      summary: 'Soft-delete an agent; repeat calls keep the first deleted_at. Its sessions stay readable, and refuse new messages with 409 agent_deleted.',
      tag: 'agents',
      response: agentResponse,
      handler: async (ctx) => agentView(await deleteAgent(deps, requireAuth(ctx).orgId, ctx.params.agent_id), config.publicUrl),
    },
    {
      method: 'POST',
      path: '/v1/agents/{agent_id}/versions',
      summary: 'Publish a new version from a ready source snapshot; activates it unless activate is false.',
      errors: [409, 422],
      tag: 'agents',
      body: { schema: publishVersionBody },
      status: 201,
      response: versionResponse,
      handler: async (ctx) => {
        const { orgId } = requireAuth(ctx);
        const { version, activeVersionId } = await publishVersion(ports, orgId, ctx.params.agent_id, ctx.state.body as PublishInput & { activate: boolean });
        return versionView(version, activeVersionId);
      },
    },
    {
      method: 'GET',
      path: '/v1/agents/{agent_id}/versions',
      summary: 'List an agent\u2019s versions, oldest first.',
      tag: 'agents',
      list: { cursor: 'version' },
      response: versionListResponse,
      handler: async (ctx) => {
        const { orgId } = requireAuth(ctx);
        const agent = await readAgent(stores.agents, orgId, ctx.params.agent_id);
        const page = requestedPage(ctx);
        const { items, has_more, next_cursor } = pageOf(await stores.agents.listVersions(orgId, agent._id, page), page.limit, (v) => v._id);
        return { versions: items.map((v) => versionView(v, agent.active_version_id)), has_more, next_cursor };
      },
    },
    {
      method: 'GET',
      path: '/v1/agents/{agent_id}/versions/{version_id}',
      summary: 'Read one version of an agent (also of a soft-deleted agent).',
      tag: 'agents',
      response: versionResponse,
      handler: async (ctx) => {
        const { version, activeVersionId } = await readVersion(stores.agents, requireAuth(ctx).orgId, ctx.params.agent_id, ctx.params.version_id);
        return versionView(version, activeVersionId);
      },
    },
    {
      method: 'POST',
      path: '/v1/agents/{agent_id}/versions/{version_id}/activate',
      summary: 'Make a published version the active one (roll forward or back); open sessions keep their version.',
      tag: 'agents',
      response: versionResponse,
      handler: async (ctx) => {
        const { version, activeVersionId } = await activateVersion(stores.agents, requireAuth(ctx).orgId, ctx.params.agent_id, ctx.params.version_id);
        return versionView(version, activeVersionId);
      },
    },
  ];
}
