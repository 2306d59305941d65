/** A tool as a turn needs it: compiled once at publish, never re-read from the archive. */
export interface ToolDef {
  name: string;
  kind: 'external' | 'custom';
  path: string;
  timeout_seconds: number;
  description: string | null;
  input_schema: Record<string, unknown> | null;
  output_schema: Record<string, unknown> | null;
}
