import { DelayedError, type Job } from 'bullmq';
import { contextOf, inSpan, tracingOn, withContext } from '../../src/lib/telemetry/tracing.js';

/** A job parked for later (a retry `later`, a per-key slot) ended well: not a failed span. */
const PARKED = Symbol('parked');

/**
 * The consumer span of one message an actor handles (`<actor> <message kind>`), continuing the context its sender
 * put in the job's telemetry field (Dispatcher): the queue hop is the gap between the two. Everything the handler
 * does (model calls, tool runs, webhook posts, the sends it hands off) is inside it. Off, the handler runs bare.
 */
export function traceJob<T>(actor: string, job: Job, run: () => Promise<T>): Promise<T> {
  if (!tracingOn()) return run();
  const attrs = {
    'messaging.system': 'bullmq',
    'messaging.operation.type': 'process',
    'messaging.destination.name': job.queueName,
    'messaging.message.id': job.id,
    'troupe.actor': actor,
    'troupe.message.kind': job.name,
    'troupe.attempt': job.attemptsMade + 1,
    'troupe.queue_wait_ms': Math.max(0, Date.now() - job.timestamp - (job.delay ?? 0)),
  };
  let parked: unknown = null;
  return inSpan(`${actor} ${job.name}`, 'consumer', attrs, async (span) => {
    try {
      return await run();
    } catch (e) {
      if (!(e instanceof DelayedError)) throw e;
      span.set('troupe.outcome', 'later');
      parked = e;
      return PARKED as T;
    }
  }, contextOf(job.opts.telemetry?.metadata)).then((r) => {
    if (parked) throw parked;
    return r;
  });
}

/** Runs `fn` in the context the job's sender put in it: what is sent on a job's behalf after it failed (onGiveUp) stays in its trace. */
export function inJobContext<T>(job: Job | undefined, fn: () => T): T {
  return tracingOn() && job ? withContext(contextOf(job.opts.telemetry?.metadata), fn) : fn();
}
