import { Agent, setGlobalDispatcher } from 'undici';

/**
 * The benches' HTTP client: keep-alive, one request at a time per connection, as an SDK or a browser would.
 * undici's `pipelining: 0` sent `connection: close` and paid a TCP connect per request in the client and the web,
 * on the cores the stack shares.
 */
export function useKeepAliveClient(): void {
  setGlobalDispatcher(new Agent({ connections: null, pipelining: 1, keepAliveTimeout: 60_000 }));
}
