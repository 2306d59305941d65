/** A resource with an idempotent close, registered in the one ordered shutdown list (src/lib/lifecycle/shutdown.ts). */
export interface Closeable {
  readonly name: string;
  close(): Promise<void>;
}
