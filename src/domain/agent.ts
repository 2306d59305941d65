/**
 * An agent's definition as Troupe reads it: the validated manifest (src/app/agents/manifest.ts), the tools and
 * scripts compiled from the archive at publish, and the entrypoint's own configuration. Stored on each version.
 */
import type { OptionProvider } from './providers.js';

/** LLM option of a manifest (DESIGN §8); the first one is the default `llm_id`. */
export interface LlmOption {
  id: string;
  provider: OptionProvider;
  model?: string;
  base_url?: string;
  api_key_credential?: string;
  router_id?: string;
  /** Archive path of the script file; `scripted` only. */
  script?: string;
  params?: Record<string, unknown>;
  /** Per million tokens; both or neither. */
  input_price?: number;
  output_price?: number;
  currency?: string;
}

export interface ManifestTool {
  name: string;
  /** External: the definition JSON file. Custom: the handler module. */
  path: string;
  kind: 'external' | 'custom';
  timeout_seconds: number;
  /** Custom tools only: optional definition JSON file giving description and input_schema. */
  definition?: string;
  /** `always_ask`: each call waits for the client's confirmation (docs/approvals.md). Absent: `always_allow`. */
  permission?: ToolPermission;
}

/** A remote MCP server of a manifest (docs/mcp.md); its tools reach the model as `mcp__<name>__<tool>`. */
export interface McpServerEntry {
  name: string;
  url: string;
  /** Name of an org credential sent as `Authorization: Bearer`; the value is read at each use, never stored here. */
  credential?: string;
  /** Only these of the server's tools; all of them when absent. */
  allowed_tools?: string[];
  /** Of every tool of the server; `always_ask` when absent. */
  permission?: ToolPermission;
  timeout_seconds: number;
}

/** The validated manifest, defaults applied. */
export interface Manifest {
  name: string;
  sdk: 'troupe-js@1';
  entrypoint: string;
  description?: string;
  version?: string;
  /** allowed_domains: absent = any public host (src/domain/allowed-domains.ts). */
  sandbox: { secrets: string[]; internet_access: boolean; allowed_domains?: string[] };
  custom_tools: ManifestTool[];
  llm_options: LlmOption[];
  mcp_servers?: McpServerEntry[];
}

/** Whether a call runs at once, or waits for the client's `user.tool_confirmation` first (DESIGN §8). */
export const TOOL_PERMISSIONS = ['always_allow', 'always_ask'] as const;
export type ToolPermission = (typeof TOOL_PERMISSIONS)[number];

/** A tool as a turn needs it: compiled once at publish, never re-read from the archive. */
export interface ToolDef {
  name: string;
  kind: 'external' | 'custom';
  path: string;
  timeout_seconds: number;
  /**
   * Any kind of tool may carry it; absent means `always_allow`. An `always_ask` call is recorded as
   * `tool.confirmation_requested` and runs only once allowed (src/domain/session/confirmation.ts).
   */
  permission?: ToolPermission;
  description: string | null;
  input_schema: Record<string, unknown> | null;
  output_schema: Record<string, unknown> | null;
  /** A remote MCP server's tool (kind `custom`: Troupe runs it): the manifest's server and the tool's own name there. */
  mcp?: { server: string; tool: string };
}

export interface ScriptToolCall {
  name: string;
  arguments: Record<string, unknown>;
  id?: string;
}

export type ScriptTurn = { text: string } | { tool_calls: ScriptToolCall[] };

export interface Script {
  turns: ScriptTurn[];
}

/** The entrypoint export, read once at publish in the sandbox (docs/agents.md). */
export interface AgentConfig {
  instructions?: string;
  /** Default llm option for new sessions. */
  llm?: string;
  /** Tools offered to the model; all of the manifest's when absent. */
  tools?: string[];
  max_turns?: number;
}
