import { actorAddress } from './address.js';

/**
 * The router-proxy actor (queue `router-proxy`) takes a `ModelCall` (declared
 * with the session's messages, whose effect it is), makes the call, and
 * answers the session with a `model.responded` command.
 */
export const ROUTER_PROXY = actorAddress('router-proxy', { attempts: 8 });
