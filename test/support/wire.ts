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
