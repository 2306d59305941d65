import type { Api } from '../../clients/typescript/src/index.js';

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

/** A schedule as the API answers it: the generated client's type, so the shape is the document's, not a copy. */
export type ScheduleBody = Api.GetV1SchedulesScheduleIdResponse;

/** One entry of `GET /v1/schedules/{id}/runs`. */
export type ScheduleRun = Api.GetV1SchedulesScheduleIdRunsResponse['runs'][number];
