import type { Db } from 'mongodb';

const TERMINAL = ['completed', 'failed', 'cancelled'];

interface EventRow {
  session_id: string;
  sequence_number: number;
  type: string;
  message_id: string | null;
  data_json: string;
  data: { to?: string; call_index?: number; position?: number; tool_call_id?: string; attempt?: number };
}

export interface Audit {
  sessions: number;
  events: number;
  /** Acknowledged messages with no `user.message` in the ledger. */
  lost: number;
  /** Events recorded more than once: a message twice, a second terminal status, a model answer twice. */
  duplicated: number;
  /** Messages not terminal, or sessions not back to idle. */
  stuck: number;
  /** Sessions whose sequence numbers are not exactly 1..N. */
  gaps: number;
  /** Messages that ended other than completed (the scripted agent never fails). */
  failed: number;
  problems: string[];
}

function count<K>(items: K[]): Map<K, number> {
  const m = new Map<K, number>();
  for (const i of items) m.set(i, (m.get(i) ?? 0) + 1);
  return m;
}

/** One look at every session's ledger and messages, straight from MongoDB (the truth). */
export async function auditOnce(db: Db, sessionIds: string[], acked: Map<string, string>): Promise<Audit> {
  const a: Audit = { sessions: sessionIds.length, events: 0, lost: 0, duplicated: 0, stuck: 0, gaps: 0, failed: 0, problems: [] };
  const events = await db.collection<EventRow>('events').find({ session_id: { $in: sessionIds } }, { projection: { session_id: 1, sequence_number: 1, type: 1, message_id: 1, data_json: 1 } }).toArray();
  for (const e of events) e.data = JSON.parse(e.data_json) as EventRow['data'];
  a.events = events.length;
  const bySession = new Map<string, EventRow[]>(sessionIds.map((s) => [s, []]));
  for (const e of events) bySession.get(e.session_id)?.push(e);
  for (const [sid, evs] of bySession) {
    evs.sort((x, y) => x.sequence_number - y.sequence_number);
    if (!evs.every((e, i) => e.sequence_number === i + 1)) {
      a.gaps++;
      a.problems.push(`${sid}: sequence ${evs.map((e) => e.sequence_number).join(',')}`);
    }
    const keys = evs.flatMap((e) => {
      if (e.type === 'user.message') return [`user.message ${e.message_id}`];
      if (e.type === 'assistant.message_completed') return [`answer ${e.message_id} ${e.data.call_index}`];
      if (e.type === 'message.status_changed' && (TERMINAL.includes(e.data.to ?? '') || e.data.to === 'queued')) return [`${e.data.to} ${e.message_id}`];
      // A code agent's journal: each position requested once and ended once; each tool call answered once.
      // A model call's retry (a retryable failure) records it started again, under its try's number.
      if (e.type === 'agent.call_started' || e.type === 'agent.progress') return [`journal ${e.message_id} ${e.data.position} ${e.data.attempt ?? 1}`];
      if (e.type === 'agent.call_completed' || e.type === 'agent.call_failed') return [`journal result ${e.message_id} ${e.data.position}`];
      if (e.type === 'tool.call_completed' || e.type === 'tool.call_failed' || e.type === 'tool.result_submitted') return [`tool result ${e.message_id} ${e.data.tool_call_id}`];
      return [];
    });
    for (const [k, n] of count(keys)) {
      if (n > 1) {
        a.duplicated += n - 1;
        a.problems.push(`${sid}: ${k} recorded ${n} times`);
      }
    }
    // Every message the ledger took must end in the ledger too, not only in the read model.
    const ended = new Set(evs.filter((e) => e.type === 'message.status_changed' && TERMINAL.includes(e.data.to ?? '')).map((e) => e.message_id));
    for (const e of evs) {
      if (e.type === 'user.message' && !ended.has(e.message_id)) {
        a.stuck++;
        a.problems.push(`${sid}: message ${e.message_id} never ends in the ledger (${evs.filter((x) => x.message_id === e.message_id).map((x) => `${x.sequence_number} ${x.type}${x.data.to ? ` ${x.data.to}` : ''}`).join(', ')})`);
      }
    }
    const last = evs.at(-1);
    if (last && !(last.type === 'session.status_changed' && last.data.to === 'idle')) {
      a.stuck++;
      a.problems.push(`${sid}: session not idle (last event ${last.sequence_number} ${last.type})`);
    }
  }
  const recorded = new Set(events.filter((e) => e.type === 'user.message').map((e) => e.message_id));
  for (const [mid, sid] of acked) {
    if (!recorded.has(mid)) {
      a.lost++;
      a.problems.push(`${sid}: acknowledged message ${mid} is not in the ledger`);
    }
  }
  const messages = await db.collection<{ _id: string; session_id: string; status: string; last_sequence?: number }>('messages').find({ session_id: { $in: sessionIds } }, { projection: { status: 1, session_id: 1, last_sequence: 1 } }).toArray();
  for (const m of messages) {
    if (!TERMINAL.includes(m.status)) {
      a.stuck++;
      // Where the read models stand against the ledger tells a lost projection write from a lost turn.
      const s = await db.collection<{ _id: string; status: string; last_sequence: number }>('sessions').findOne({ _id: m.session_id }, { projection: { status: 1, last_sequence: 1 } });
      const ledger = bySession.get(m.session_id)?.at(-1)?.sequence_number;
      const copies = messages.filter((o) => o._id === m._id).map((o) => `${o.status}@${o.last_sequence}`);
      a.problems.push(`${m.session_id}: message ${m._id} is ${m.status} (its last_sequence ${m.last_sequence}; stored as ${copies.join(', ')}; the session's read model ${s?.status} at ${s?.last_sequence}; the ledger at ${ledger})`);
    } else if (m.status !== 'completed') a.failed++;
  }
  return a;
}

export const settled = (a: Audit) => a.stuck === 0;

/** Audits until nothing is stuck or the deadline passes; returns the last audit and when it settled. */
export async function auditUntilSettled(db: Db, sessionIds: string[], acked: Map<string, string>, ms: number): Promise<{ audit: Audit; settledAt: number | null }> {
  const deadline = Date.now() + ms;
  for (;;) {
    const audit = await auditOnce(db, sessionIds, acked).catch((err: Error) => ({ ...emptyAudit(sessionIds.length), stuck: -1, problems: [err.message] }));
    if (audit.stuck === 0) return { audit, settledAt: Date.now() };
    if (Date.now() > deadline) return { audit, settledAt: null };
    await new Promise((r) => setTimeout(r, 250));
  }
}

function emptyAudit(sessions: number): Audit {
  return { sessions, events: 0, lost: 0, duplicated: 0, stuck: 0, gaps: 0, failed: 0, problems: [] };
}

/**
 * Time to recover: from the moment the faulty part was back until the last
 * message the fault caught (its client had started sending it before then)
 * reached its terminal status, by the ledger's own clock. Messages sent
 * afterwards are ordinary traffic, timed by nothing here; the audit still
 * requires every one of them to finish. Null while any caught one is not terminal.
 */
export async function recoveryMs(db: Db, firstTried: Map<string, number>, back: number): Promise<number | null> {
  const caught = [...firstTried].filter(([, t]) => t < back).map(([id]) => id);
  const docs = await db.collection<{ _id: string; status: string; completed_at: string | null }>('messages').find({ _id: { $in: caught } }, { projection: { status: 1, completed_at: 1 } }).toArray();
  if (docs.length < caught.length || docs.some((m) => !TERMINAL.includes(m.status) || !m.completed_at)) return null;
  return Math.max(0, ...docs.map((m) => Date.parse(m.completed_at!) - back));
}
