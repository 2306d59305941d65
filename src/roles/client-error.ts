import { maxHeaderSize, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { ErrorType, type ErrorBody } from '../domain/errors.js';

/** What Node's parser refused, as status, reason phrase and error body (the codes Node's own handler maps). */
function answerFor(code: string | undefined): [number, string, ErrorBody] {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return [431, 'Request Header Fields Too Large', { type: ErrorType.tooLarge, code: 'headers_too_large', message: `The request line and headers exceed ${maxHeaderSize} bytes, the most this server reads; shorten the URL or the headers.` }];
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return [413, 'Payload Too Large', { type: ErrorType.tooLarge, code: 'chunk_extensions_too_large', message: 'The chunk extensions of the request body are too large.' }];
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'Request Timeout', { type: ErrorType.invalidRequest, code: 'request_timeout', message: 'The request did not arrive in time; it was abandoned.' }];
    default:
      return [400, 'Bad Request', { type: ErrorType.invalidRequest, code: 'malformed_http', message: `The request is not valid HTTP/1.1 (${code ?? 'unparsable'}).` }];
  }
}

/**
 * A server's `clientError` listener: what Node's HTTP parser refuses (a URL or
 * headers past maxHeaderSize, bytes that are not HTTP) is answered in the
 * error shape instead of Node's bare status line, then the connection closes,
 * as Node's own handler does: the parser cannot find where the next request
 * starts. A socket mid-answer or already gone is only destroyed.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, reason, body] = answerFor(err.code);
  const json = JSON.stringify({ error: body });
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`);
}
