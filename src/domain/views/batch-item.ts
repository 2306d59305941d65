/** A batch item's result as stored and as the API shows it. */

/** One item's result as the spec lists it, plus the first message id (internal, never returned). */
export interface BatchItem {
  index: number;
  session_id: string | null;
  status: string;
  last_message_status: string | null;
  agent_id: string;
  version_id: string | null;
  llm_id: string | null;
  metadata: Record<string, string>;
  transcript_url: string | null;
  error: string | null;
  message_id?: string;
}

/** An item as clients see it: without the internal message id. */
export interface BatchItemView extends Omit<BatchItem, 'message_id'> {}

export function itemView(item: BatchItem): BatchItemView {
  const { message_id: _m, ...view } = item;
  return view;
}
