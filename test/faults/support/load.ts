import type { Db } from 'mongodb';
import { newId } from '../../../src/domain/ids.js';
import { AgentStore } from '../../../src/store/agents.js';
import type { LlmOption, ScriptTurn } from '../../../src/domain/agent.js';

/** A scripted agent written straight into the cluster's database (publishing has its own tests). */
export async function scriptedAgent(db: Db, turns: ScriptTurn[] = [{ text: 'done' }]): Promise<string> {
  return agentInDb(db, [{ id: 'main', provider: 'scripted', script: 'script.json' }], { main: { turns } });
}

/** An agent with these llm options (and declared secrets), written straight into the database. */
export async function agentInDb(db: Db, llmOptions: LlmOption[], scripts: Record<string, { turns: ScriptTurn[] }> = {}, secrets: string[] = []): Promise<string> {
  const org = await db.collection<{ _id: string; name: string }>('orgs').findOne({ name: 'default' });
  if (!org) throw new Error('no default org yet: start a role first');
  const manifest = {
    name: 'fault-agent',
    sdk: 'troupe-js@1' as const,
    entrypoint: 'agent.js:agent',
    sandbox: { secrets, internet_access: false },
    custom_tools: [],
    llm_options: llmOptions,
  };
  const { agent } = await new AgentStore(db).create(
    { id: newId('agent'), orgId: org._id, name: 'fault-agent' },
    { id: newId('version'), snapshotId: newId('snapshot'), content: { manifest, llm_options: llmOptions, tools: [], scripts, entrypoint: manifest.entrypoint } },
  );
  return agent._id;
}

export interface LoadOptions {
  /** Base URLs of live web processes; asked again on every attempt, so a killed one is left behind. */
  webUrls: () => string[];
  apiKey: string;
  /** Give up on one message after this long (the audit then counts it as lost). */
  perMessageDeadlineMs?: number;
}

/**
 * Clients as a well-behaved user writes them: every message has an
 * Idempotency-Key and is retried with it until it is acknowledged (2xx), on a
 * network error, a 5xx or a 409 (the first attempt still in flight). Retries
 * rotate over the web processes.
 */
export class Load {
  /** message id → session id, for every acknowledged POST. */
  readonly acked = new Map<string, string>();
  /** message id → when its client first tried to send it (ms epoch). */
  readonly firstTried = new Map<string, number>();
  posts = 0;
  retries = 0;
  /** 500s: a store outage is a 503 to retry; a 500 means an error nobody mapped. */
  readonly internalErrors: string[] = [];
  /** Messages never acknowledged (client gave up). */
  readonly abandoned: string[] = [];
  private turn = 0;

  constructor(private readonly opts: LoadOptions) {}

  private async post(path: string, body: unknown, key?: string): Promise<Response> {
    const urls = this.opts.webUrls();
    const base = urls[this.turn++ % urls.length];
    const headers: Record<string, string> = { Authorization: `Bearer ${this.opts.apiKey}`, 'Content-Type': 'application/json' };
    if (key) headers['Idempotency-Key'] = key;
    return fetch(base + path, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(20_000) });
  }

  /** POST until acknowledged; null if the deadline passed first. */
  async acknowledged<T>(path: string, body: unknown, key?: string): Promise<T | null> {
    const deadline = Date.now() + (this.opts.perMessageDeadlineMs ?? 60_000);
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      if (attempt > 0) this.retries++;
      this.posts++;
      try {
        const res = await this.post(path, body, key);
        const text = await res.text();
        if (res.ok) return JSON.parse(text) as T;
        if (res.status === 500) this.internalErrors.push(`POST ${path}: ${text.slice(0, 200)}`);
        if (res.status < 500 && res.status !== 409) throw new Error(`POST ${path} answered ${res.status}: ${text}`);
      } catch (err) {
        if (err instanceof Error && err.message.startsWith('POST ')) throw err;
      }
      await new Promise((r) => setTimeout(r, Math.min(1000, 100 * 2 ** Math.min(attempt, 4))));
    }
    return null;
  }

  async session(agentId: string): Promise<string> {
    const s = await this.acknowledged<{ id: string }>(`/v1/agents/${agentId}/sessions`, {}, `fault-session-${newId('message')}`);
    if (!s) throw new Error('could not create a session');
    return s.id;
  }

  /** Sends `count` messages to one session, one after another, each retried until acknowledged; `first` numbers them (and their keys). */
  async messages(sessionId: string, count: number, gapMs = 0, first = 1): Promise<void> {
    for (let i = first; i < first + count; i++) {
      const key = `${sessionId}-m${i}`;
      const tried = Date.now();
      const r = await this.acknowledged<{ message: { id: string } }>(`/v1/sessions/${sessionId}/events`, { type: 'user.message', content: [{ type: 'text', text: `message ${i}` }] }, key);
      if (r) {
        this.acked.set(r.message.id, sessionId);
        this.firstTried.set(r.message.id, tried);
      }
      else this.abandoned.push(key);
      if (gapMs) await new Promise((res) => setTimeout(res, gapMs));
    }
  }
}
