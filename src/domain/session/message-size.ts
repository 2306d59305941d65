/**
 * The most one message may hold as stored, in JSON bytes: the user's content
 * plus the output its turn adds (model text, tool calls and tool results).
 * The `messages` read model keeps a message as one document, which MongoDB
 * caps at 16 MiB; the driver refuses an oversized document before sending,
 * and with it the whole group-commit flush it is in, so every other
 * session's turn in that flush failed too, and the message's own session
 * could never be written again. Half the cap leaves room for the rest of the
 * document and for model text that a tool result is followed by.
 */
export const MESSAGE_MAX_MIB = 8;
export const MESSAGE_MAX_BYTES = MESSAGE_MAX_MIB * 1024 * 1024;

export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value ?? null));
}

/** What a message holds now (content and output), in JSON bytes. */
export function storedBytes(m: { parts: unknown; output: unknown }): number {
  return jsonBytes(m.parts) + jsonBytes(m.output);
}
