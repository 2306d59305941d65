/**
 * The loose wire shapes integration tests read responses as: a ledger event as `GET …/events` lists it, and the
 * error body every 4xx and 5xx carries (docs/api.md). Written once here; a test that needs one event type's exact
 * data reads the generated client's types instead.
 */
export interface LedgerEvent {
  sequence_number: number;
  type: string;
  message_id: string | null;
  data: Record<string, unknown>;
}

export interface ErrorBody {
  error: { type: string; code: string; message: string; param?: string };
}

/** A schedule as `GET /v1/schedules/{id}` answers it. */
export interface ScheduleBody {
  id: string;
  agent_id: string;
  name: string | null;
  cron: string;
  timezone: string;
  paused: boolean;
  paused_reason: string | null;
  next_run_at: string | null;
  created_at: string;
}

/** One entry of `GET /v1/schedules/{id}/runs`. */
export interface ScheduleRun {
  scheduled_for: string;
  session_id: string;
  message_id: string;
  status: string;
  error: string | null;
}
