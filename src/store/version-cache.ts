import type { AgentVersionDoc } from './agents.js';

const CACHE_MAX = 1000;

/**
 * Versions are immutable, so a process keeps the ones it has used: a turn or
 * a model call then costs no extra read, and the schema validators compiled
 * for a version's objects stay cached with them.
 */
export class VersionCache {
  private readonly versions = new Map<string, AgentVersionDoc>();

  constructor(private readonly load: (orgId: string, id: string) => Promise<AgentVersionDoc | null>) {}

  async get(orgId: string, id: string): Promise<AgentVersionDoc | null> {
    const hit = this.versions.get(id);
    if (hit && hit.org_id === orgId) return hit;
    const v = await this.load(orgId, id);
    if (v) {
      if (this.versions.size >= CACHE_MAX) this.versions.delete(this.versions.keys().next().value!);
      this.versions.set(id, v);
    }
    return v;
  }
}
