/** What a known secret is replaced with wherever it would otherwise be stored, logged or returned. */
export const REDACTED = '[redacted]';

/**
 * Shorter values are not scrubbed: a 3-character "secret" would shred ordinary
 * text, and is no secret anyway. Every real key or credential is far longer.
 */
export const MIN_SECRET_LENGTH = 6;

/**
 * Removes known secret values from untrusted text (a provider's error body, a
 * streamed model answer). The forms a server is likely to echo are covered: the
 * value as is, JSON-escaped and percent-encoded. Longest first, so a secret
 * that contains another is removed whole.
 */
export class Redactor {
  private readonly needles: string[];

  constructor(secrets: Iterable<string | null | undefined>) {
    const forms = new Set<string>();
    for (const s of secrets) {
      if (typeof s !== 'string' || s.length < MIN_SECRET_LENGTH) continue;
      forms.add(s);
      forms.add(JSON.stringify(s).slice(1, -1));
      forms.add(encodeURIComponent(s));
    }
    this.needles = [...forms].sort((a, b) => b.length - a.length);
  }

  get empty(): boolean {
    return this.needles.length === 0;
  }

  redact(text: string): string {
    let out = text;
    for (const n of this.needles) if (out.includes(n)) out = out.split(n).join(REDACTED);
    return out;
  }

  /** A scrubber for one stream of text pieces (a streamed answer), where a secret may be split across pieces. */
  stream(): StreamRedactor {
    return new StreamRedactor(this.needles);
  }
}

/**
 * Scrubs text that arrives in pieces. It holds back only the tail that could
 * still be the start of a secret (at most the longest secret's length less
 * one), so deltas keep flowing and a key split across two deltas is caught.
 */
export class StreamRedactor {
  private held = '';
  private readonly hold: number;

  constructor(private readonly needles: readonly string[]) {
    this.hold = Math.max(0, ...needles.map((n) => n.length - 1));
  }

  /** Text that is safe to pass on now (possibly ''). */
  push(piece: string): string {
    if (this.needles.length === 0) return piece;
    let buf = this.held + piece;
    let out = '';
    for (let hit = this.first(buf); hit; hit = this.first(buf)) {
      out += buf.slice(0, hit.at) + REDACTED;
      buf = buf.slice(hit.at + hit.length);
    }
    const cut = Math.max(0, buf.length - this.hold);
    this.held = buf.slice(cut);
    return out + buf.slice(0, cut);
  }

  /** Whatever is held back; it holds no whole secret, so it is passed on as is. */
  flush(): string {
    const rest = this.held;
    this.held = '';
    return rest;
  }

  private first(buf: string): { at: number; length: number } | null {
    let best: { at: number; length: number } | null = null;
    for (const n of this.needles) {
      const at = buf.indexOf(n);
      if (at >= 0 && (!best || at < best.at)) best = { at, length: n.length };
    }
    return best;
  }
}
