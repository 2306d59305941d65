import pino, { type Logger } from 'pino';
import { logIds, tracingOn } from '../telemetry/tracing.js';

export type { Logger };

/**
 * Paths that may carry secrets anywhere Troupe logs an object. pino removes
 * them before serialisation, so a secret never reaches a log line even when a
 * whole request body or config is logged by mistake.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-upload-token"]',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'secrets',
  '*.secrets',
  'llm_api_key',
  '*.llm_api_key',
  'value',
  '*.value',
  'signing_secret',
  '*.signing_secret',
  'api_key',
  '*.api_key',
  'apiKey',
  '*.apiKey',
  'password',
  '*.password',
  'token',
  '*.token',
  'masterKeys',
  'config.masterKeys',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'troupe' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
      // With tracing on, a line logged inside a span carries its trace_id and span_id; off, no mixin runs at all.
      ...(tracingOn() ? { mixin: logIds } : {}),
    },
    destination,
  );
}

/**
 * A request's child logger (with its request id), made on first use: most requests log nothing, and a pino
 * child per request showed in the router's profile. Both HTTP stacks take their request logger from here.
 */
export function lazyRequestLog(log: Logger, requestId: string): () => Logger {
  let child: Logger | undefined;
  return () => (child ??= log.child({ request_id: requestId }));
}
