import { TroupeClient } from '../../typescript/src/client.js';

const KEY = 'troupe.apiKey';

/**
 * The page's shared state. The API key lives in sessionStorage: it survives
 * reloads of this tab and is gone when the tab closes; it is never put in a
 * URL, a cookie or localStorage.
 */
export const state = {
  client: null as TroupeClient | null,
  agentId: null as string | null,
  sessionId: null as string | null,
};

export function connect(apiKey: string): TroupeClient {
  sessionStorage.setItem(KEY, apiKey);
  state.client = new TroupeClient({ baseUrl: location.origin, apiKey });
  return state.client;
}

export function savedKey(): string | null {
  return sessionStorage.getItem(KEY);
}

export function forget(): void {
  sessionStorage.removeItem(KEY);
  state.client = null;
}

export function client(): TroupeClient {
  if (!state.client) throw new Error('Enter an API key first.');
  return state.client;
}
