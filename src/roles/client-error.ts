import { maxHeaderSize, STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { ErrorType, InvalidRequestError, PayloadTooLargeError, TroupeError } from '../domain/errors.js';

/** What Node's parser refused, as the domain error a route would have thrown (the codes Node's own handler maps). */
function errorFor(code: string | undefined): TroupeError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new TroupeError(431, ErrorType.tooLarge, 'headers_too_large', `The request line and headers exceed ${maxHeaderSize} bytes, the most this server reads; shorten the URL or the headers.`);
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new PayloadTooLargeError('The chunk extensions of the request body are too large.', 'chunk_extensions_too_large');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new TroupeError(408, ErrorType.invalidRequest, 'request_timeout', 'The request did not arrive in time; it was abandoned.');
    default:
      return new InvalidRequestError(`The request is not valid HTTP/1.1 (${code ?? 'unparsable'}).`, undefined, 'malformed_http');
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
  const e = errorFor(err.code);
  const json = JSON.stringify({ error: e.toBody() });
  socket.end(`HTTP/1.1 ${e.status} ${STATUS_CODES[e.status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`);
}
