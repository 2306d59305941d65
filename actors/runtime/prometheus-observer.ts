import type { Queue } from 'bullmq';
import type { TurnObserver } from './observer.js';
import type { EventDoc, LedgerStore } from '../../src/store/ledger.js';
import type { Metrics, QueueProbe } from '../../src/lib/metrics/metrics.js';

/** The actor runtime's observer: every handled message's duration and queueing delay. */
export function turnMetrics(metrics: Metrics): TurnObserver {
  return {
    turn: (r) => {
      metrics.turnDuration.observe({ actor: r.actor, result: r.result }, r.duration_ms / 1000);
      metrics.turnWait.observe({ actor: r.actor }, r.waited_ms / 1000);
    },
  };
}

/**
 * Backlog of one BullMQ queue; the oldest waiting job is read from the head of each waiting list. Not read
 * while its Redis connection is not `ready`: the commands would wait for the reconnect, and a scrape held
 * 12 s past Prometheus's 10 s timeout made the whole process look down for as long as Redis was.
 */
export function queueProbe(queue: Queue, ready: () => boolean): QueueProbe {
  return async () => {
    if (!ready()) throw new Error('redis is not connected');
    const [counts, waiting, prioritized] = await Promise.all([
      queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active'),
      queue.getJobs(['waiting'], 0, 0, true),
      queue.getJobs(['prioritized'], 0, 0, true),
    ]);
    const stamps = [...waiting, ...prioritized].map((j) => j.timestamp).filter((t) => Number.isFinite(t));
    return { counts, oldestWaitingAt: stamps.length ? Math.min(...stamps) : null };
  };
}

/** What an appended event says about tool calls, as a `troupe_tool_calls_total` outcome. */
function toolOutcome(doc: EventDoc): string | null {
  switch (doc.type) {
    case 'tool.call_requested':
      return 'requested';
    case 'tool.call_completed':
      return 'completed';
    case 'tool.result_submitted':
      return 'submitted';
    case 'tool.confirmation_requested':
      return 'confirmation_requested';
    case 'user.tool_confirmation':
      return (JSON.parse(doc.data_json) as { result?: unknown }).result === 'allow' ? 'confirmation_allowed' : 'confirmation_denied';
    case 'tool.call_failed': {
      const reason = (JSON.parse(doc.data_json) as { reason?: unknown }).reason;
      return `failed_${typeof reason === 'string' ? reason : 'unknown'}`;
    }
    default:
      return null;
  }
}

/**
 * The session actor's ledger port, counting what it appends once the write
 * has succeeded: events by type, and tool-call outcomes (every outcome is a
 * ledger event, so this is the one place that sees them all).
 */
export function countedLedger<L extends Pick<LedgerStore, 'append'>>(ledger: L, metrics: Metrics): L {
  const append = async (docs: EventDoc[]) => {
    await ledger.append(docs);
    for (const d of docs) {
      metrics.eventsAppended.inc({ type: d.type });
      const outcome = toolOutcome(d);
      if (outcome) metrics.toolCalls.inc({ outcome });
    }
  };
  return new Proxy(ledger, { get: (target, prop, receiver) => (prop === 'append' ? append : Reflect.get(target, prop, receiver)) });
}
