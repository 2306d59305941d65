/** A message as stored and as the API shows it. */
import type { MessageState } from '../ledger.js';

/** As stored: `output` is JSON text, since tool-call arguments are client JSON FerretDB v1 may not store. */
export interface MessageDoc extends Omit<MessageState, 'id' | 'output'> {
  _id: string;
  org_id: string;
  output_json: string;
}

export interface MessageView {
  id: string;
  session_id: string;
  sequence_number: number;
  parts: MessageState['parts'];
  metadata: Record<string, string> | null;
  status: string;
  attempt: number;
  output: MessageState['output'];
  error: string | null;
  created_at: string;
  completed_at: string | null;
}

export function messageView(doc: MessageDoc | MessageState): MessageView {
  const m = 'id' in doc ? doc : messageState(doc);
  return {
    id: m.id,
    session_id: m.session_id,
    sequence_number: m.sequence_number,
    parts: m.parts,
    metadata: m.metadata,
    status: m.status,
    attempt: m.attempt,
    output: m.output,
    error: m.error,
    created_at: m.created_at,
    completed_at: m.completed_at,
  };
}

export function messageState(doc: MessageDoc): MessageState {
  const { _id, org_id: _org, output_json, ...rest } = doc;
  return { id: _id, ...rest, output: JSON.parse(output_json) as MessageState['output'] };
}
