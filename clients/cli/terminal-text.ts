/**
 * Characters the CLI never writes raw: C0 controls but newline and tab (ESC starts the sequences that move the
 * cursor, retitle the window or, with OSC 52, write the clipboard; CR overwrites a line), DEL and the C1 controls
 * (U+009B is a one-character CSI), and the bidirectional marks, embeddings, overrides and isolates, which reorder
 * what a reader sees. Model output and user text reach `troupe tail` and `troupe send` as they were written.
 */
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * The text with each unsafe character written as its `\uXXXX` escape. In JSON output (where JSON.stringify left
 * DEL, C1 and bidirectional characters raw) that escape is JSON's own, so the value a parser reads is unchanged.
 */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
