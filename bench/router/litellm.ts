/**
 * LiteLLM's proxy as the comparison point: installed into the git-ignored
 * bench/.venv on first use, started against the same fake upstream.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const VENV = resolve(__dirname, '../../../bench/.venv');
const BIN = join(VENV, 'bin', 'litellm');
export const LITELLM_KEY = 'sk-litellm-bench-key';

export function ensureLitellm(): string {
  if (existsSync(BIN)) return BIN;
  process.stderr.write('[bench] installing litellm[proxy] into bench/.venv (once)\n');
  execFileSync('python3', ['-m', 'venv', VENV], { stdio: 'inherit' });
  execFileSync(join(VENV, 'bin', 'pip'), ['install', '-q', 'litellm[proxy]'], { stdio: 'inherit' });
  return BIN;
}

/** Starts the proxy with model `bench-openai` (chat upstream) and `bench-anthropic` (messages upstream). */
export function startLitellm(port: number, fakeUrl: string): ChildProcess {
  const dir = mkdtempSync(join(tmpdir(), 'litellm-'));
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    [
      'model_list:',
      '  - model_name: bench-openai',
      '    litellm_params: {model: openai/m, api_base: "' + fakeUrl + '/v1", api_key: sk-bench}',
      '  - model_name: bench-anthropic',
      '    litellm_params: {model: anthropic/m, api_base: "' + fakeUrl + '", api_key: sk-bench}',
      // LiteLLM measured at its best: every switch for per-request work after the answer (logging, spend and
      // cost tracking) is off. Without a database it writes no spend logs anyway; the switches make sure.
      'litellm_settings: {drop_params: true, telemetry: false, turn_off_message_logging: true, disable_streaming_logging: true, disable_end_user_cost_tracking: true}',
      // Both proxies authenticate every call, like for like.
      `general_settings: {master_key: ${LITELLM_KEY}, disable_spend_logs: true, disable_spend_updates: true, disable_error_logs: true}`,
      '',
    ].join('\n'),
  );
  const env = { ...process.env, LITELLM_LOG: 'ERROR', LITELLM_TELEMETRY: 'False', DISABLE_SCHEMA_UPDATE: 'true' };
  const child = spawn(ensureLitellm(), ['--config', config, '--port', String(port), '--host', '127.0.0.1', '--num_workers', '1'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr!.on('data', (d: Buffer) => {
    if (/error|Traceback/i.test(String(d))) process.stderr.write(`[litellm] ${d}`);
  });
  return child;
}
