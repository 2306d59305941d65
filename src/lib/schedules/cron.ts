import { CronExpressionParser } from 'cron-parser';
import { InvalidRequestError } from '../../domain/errors.js';

/** Intervals looked at to find a cron's shortest one: enough to meet every field's smallest step at least once. */
const INTERVALS_CHECKED = 64;

/** Whether the runtime knows the IANA zone; `Intl` refuses any other name with a RangeError. */
export function checkTimezone(timezone: string, param = 'timezone'): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    throw new InvalidRequestError(`timezone ${JSON.stringify(timezone)} is not an IANA time zone (like UTC or Europe/Paris).`, param);
  }
  // Intl also takes offsets like "+01:00", which BullMQ's cron parser does not.
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(timezone)) throw new InvalidRequestError(`timezone ${JSON.stringify(timezone)} is not an IANA time zone (like UTC or Europe/Paris).`, param);
}

function parse(cron: string, timezone: string, from: Date) {
  return CronExpressionParser.parse(cron, { tz: timezone, currentDate: from });
}

/**
 * Checks a schedule's cron the way BullMQ will run it: 5 fields, or 6 with
 * seconds first (cron-parser, BullMQ's own parser, also takes 7 and macros;
 * those are refused so that the wire format is the documented one), that it
 * fires at all, and that no two ticks are closer than `minIntervalMs`.
 */
export function checkCron(cron: string, timezone: string, minIntervalMs: number, param = 'cron'): void {
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) {
    throw new InvalidRequestError(`cron ${JSON.stringify(cron)} must have 5 fields (minute hour day month weekday) or 6 with seconds first; it has ${fields.length}.`, param);
  }
  let times: number[];
  try {
    const expr = parse(cron, timezone, new Date());
    times = [];
    for (let i = 0; i <= INTERVALS_CHECKED && expr.hasNext(); i++) times.push(expr.next().getTime());
  } catch (err) {
    throw new InvalidRequestError(`cron ${JSON.stringify(cron)} is not a valid cron expression: ${(err as Error).message}.`, param);
  }
  if (times.length === 0) throw new InvalidRequestError(`cron ${JSON.stringify(cron)} never fires.`, param);
  for (let i = 1; i < times.length; i++) {
    if (times[i] - times[i - 1] < minIntervalMs) {
      throw new InvalidRequestError(`cron ${JSON.stringify(cron)} fires ${times[i] - times[i - 1]} ms apart; schedules may fire every ${minIntervalMs} ms at most.`, param);
    }
  }
}

/** When the cron next fires after `from`, or null if it never does again. */
export function nextRunAt(cron: string, timezone: string, from = new Date()): Date | null {
  try {
    const expr = parse(cron, timezone, from);
    return expr.hasNext() ? expr.next().toDate() : null;
  } catch {
    return null;
  }
}
