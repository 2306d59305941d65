import { newId } from '../../src/domain/ids.js';
import type { LlmOption, ScriptTurn, ToolDef } from '../../src/domain/agent.js';
import { AgentStore } from '../../src/store/agents.js';
import type { Harness } from './harness.js';

/**
 * An agent with one scripted llm option, written straight into the store.
 * Session tests use it so they do not depend on archive publishing, which
 * has tests of its own.
 */
export async function scriptedAgent(h: Harness, turns: ScriptTurn[], opts: { orgName?: string; secrets?: string[] } = {}): Promise<{ agentId: string; versionId: string; orgId: string }> {
  const core = h.running.core;
  const org = (await core.stores.orgs.byName(opts.orgName ?? 'default'))!;
  const agents = new AgentStore(core.db);
  const manifest = {
    name: 'fixture',
    sdk: 'troupe-js@1' as const,
    entrypoint: 'agent.js:agent',
    sandbox: { secrets: opts.secrets ?? [], internet_access: false },
    custom_tools: [],
    llm_options: [
      { id: 'main', provider: 'scripted' as const, script: 'script.json' },
      { id: 'alt', provider: 'scripted' as const, script: 'script.json' },
    ],
  };
  const { agent, version } = await agents.create(
    { id: newId('agent'), orgId: org._id, name: 'fixture' },
    { id: newId('version'), snapshotId: newId('snapshot'), content: { manifest, llm_options: manifest.llm_options, tools: [], scripts: { main: { turns }, alt: { turns: [{ text: 'alt says hi' }] } }, entrypoint: manifest.entrypoint } },
  );
  return { agentId: agent._id, versionId: version._id, orgId: org._id };
}

/** An agent with the given tools and llm options, written straight into the store. */
export async function agentWith(
  h: Harness,
  opts: { tools?: ToolDef[]; llm_options: LlmOption[]; scripts?: Record<string, { turns: ScriptTurn[] }>; secrets?: string[] },
): Promise<{ agentId: string; versionId: string }> {
  const core = h.running.core;
  const org = (await core.stores.orgs.byName('default'))!;
  const manifest = {
    name: 'fixture',
    sdk: 'troupe-js@1' as const,
    entrypoint: 'agent.js:agent',
    sandbox: { secrets: opts.secrets ?? [], internet_access: false },
    custom_tools: (opts.tools ?? []).map((t) => ({ name: t.name, path: t.path, kind: t.kind, timeout_seconds: t.timeout_seconds })),
    llm_options: opts.llm_options,
  };
  const { agent, version } = await new AgentStore(core.db).create(
    { id: newId('agent'), orgId: org._id, name: 'fixture' },
    { id: newId('version'), snapshotId: newId('snapshot'), content: { manifest, llm_options: opts.llm_options, tools: opts.tools ?? [], scripts: opts.scripts ?? {}, entrypoint: manifest.entrypoint } },
  );
  return { agentId: agent._id, versionId: version._id };
}
