import type { EventOf } from './stream.js';

/** A user message's content as one line for a person: its text, and a file block as `[type file_id]`. */
export function contentText(blocks: EventOf<'user.message'>['data']['content']): string {
  return blocks.map((b) => (b.type === 'text' ? String(b.text) : `[${b.type} ${b.file_id ?? ''}]`)).join(' ');
}
