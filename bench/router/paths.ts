/**
 * The paths a router bench call can take (direct to the fake upstream, through
 * the router, a baseline router, the floors, the peers), one timed call, and
 * the case table: for each case (chat → openai or → anthropic, whole answer or
 * time to first token) the request each path makes.
 */
import { Agent, request } from 'undici';
import { LITELLM_KEY } from './litellm.js';
import { portkeyHeaders } from './portkey.js';

const agent = new Agent({ keepAliveTimeout: 60_000, connections: 256 });

/** Closes the pooled connections every timed call goes through. */
export function closeCalls(): Promise<void> {
  return agent.close();
}

/** Non-empty answer text in any of the formats: a chat delta or message `content`, an Anthropic `text`. */
const ANSWER_TEXT = /"(?:content|text)":"[^"]/;

/** One call; returns [total ms, ms to the first chunk that carries text]. */
export async function call(url: string, headers: Record<string, string>, body: string): Promise<[number, number]> {
  const t0 = performance.now();
  const res = await request(url, { method: 'POST', headers, body, dispatcher: agent });
  let first = NaN;
  let head = '';
  for await (const chunk of res.body) {
    if (head.length < 600) head += String(chunk);
    if (Number.isNaN(first) && ANSWER_TEXT.test(String(chunk))) first = performance.now() - t0;
  }
  // A proxy that answers without the text (an error, an empty stream) has not done the work.
  if (res.statusCode !== 200 || Number.isNaN(first)) throw new Error(`${url} answered ${res.statusCode} without the answer text: ${head}`);
  return [performance.now() - t0, first];
}

export type Path = () => Promise<[number, number]>;

export type Peers = { direct: Path; router: Path; baseline?: Path; traced?: Path; traced10?: Path; floor?: Path; lean?: Path; leanNet?: Path; relay?: Path; go?: Path; litellm?: Path; portkey?: Path };
export const PEER_NAME: Record<string, string> = { router: 'router', baseline: 'baseline router', traced: 'router, tracing 100%', traced10: 'router, tracing 10%', floor: 'bare Node proxy', lean: 'lean Node proxy (undici out)', leanNet: 'lean Node proxy (net out)', relay: 'Node TCP relay', go: 'Go reverse proxy', litellm: 'LiteLLM', portkey: 'Portkey' };

/** Where each path's process listens (null: not started in this run). */
export interface Origins {
  fake: string;
  router: string;
  baseline: string | null;
  /** The same build's router with tracing on (--tracing): every call sampled, and one in ten. */
  traced: string | null;
  traced10: string | null;
  floor: string | null;
  lean: string | null;
  leanNet: string | null;
  relay: string | null;
  go: string | null;
  litellm: string | null;
  portkey: string | null;
}

/** The timed cases, in the order they run, each with the call every path makes. */
export function caseTable(o: Origins, routingKey: string): [string, Peers][] {
  const h = { authorization: `Bearer ${routingKey}`, 'content-type': 'application/json' };
  const chat = (stream: boolean) => JSON.stringify({ model: 'service/routing', messages: [{ role: 'user', content: 'Say hello.' }], stream });
  const direct = (stream: boolean) => JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Say hello.' }], stream, ...(stream ? { stream_options: { include_usage: true } } : {}) });
  const anthDirect = (stream: boolean) => JSON.stringify({ model: 'm', max_tokens: 256, messages: [{ role: 'user', content: 'Say hello.' }], stream });
  const anthHeaders = { 'x-api-key': 'sk-bench', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };
  const viaLitellm = (model: string, stream: boolean) => JSON.stringify({ model, messages: [{ role: 'user', content: 'Say hello.' }], stream });
  const lh = { 'content-type': 'application/json', authorization: `Bearer ${LITELLM_KEY}` };
  const { fake: fakeUrl, router, baseline, traced, traced10, floor, lean, leanNet, relay, go, litellm, portkey } = o;
  const cases: [string, Peers][] = [];
  for (const stream of [false, true]) {
    cases.push([`chat → openai${stream ? ', TTFT' : ''}`, {
      direct: () => call(`${fakeUrl}/v1/chat/completions`, h, direct(stream)),
      router: () => call(`${router}/chat/chat/completions`, h, chat(stream)),
      baseline: baseline ? () => call(`${baseline}/chat/chat/completions`, h, chat(stream)) : undefined,
      traced: traced ? () => call(`${traced}/chat/chat/completions`, h, chat(stream)) : undefined,
      traced10: traced10 ? () => call(`${traced10}/chat/chat/completions`, h, chat(stream)) : undefined,
      floor: floor ? () => call(`${floor}/chat/chat/completions`, h, chat(stream)) : undefined,
      lean: lean ? () => call(`${lean}/chat/chat/completions`, h, chat(stream)) : undefined,
      leanNet: leanNet ? () => call(`${leanNet}/chat/chat/completions`, h, chat(stream)) : undefined,
      relay: relay ? () => call(`${relay}/v1/chat/completions`, h, direct(stream)) : undefined,
      go: go ? () => call(`${go}/v1/chat/completions`, h, direct(stream)) : undefined,
      litellm: litellm ? () => call(`${litellm}/v1/chat/completions`, lh, viaLitellm('bench-openai', stream)) : undefined,
      portkey: portkey ? () => call(`${portkey}/v1/chat/completions`, portkeyHeaders('openai', fakeUrl), direct(stream)) : undefined,
    }]);
    cases.push([`chat → anthropic${stream ? ', TTFT' : ''}`, {
      direct: () => call(`${fakeUrl}/v1/messages`, anthHeaders, anthDirect(stream)),
      router: () => call(`${router}/anth/chat/completions`, h, chat(stream)),
      baseline: baseline ? () => call(`${baseline}/anth/chat/completions`, h, chat(stream)) : undefined,
      traced: traced ? () => call(`${traced}/anth/chat/completions`, h, chat(stream)) : undefined,
      traced10: traced10 ? () => call(`${traced10}/anth/chat/completions`, h, chat(stream)) : undefined,
      floor: floor ? () => call(`${floor}/anth/chat/completions`, h, chat(stream)) : undefined,
      lean: lean ? () => call(`${lean}/anth/chat/completions`, h, chat(stream)) : undefined,
      leanNet: leanNet ? () => call(`${leanNet}/anth/chat/completions`, h, chat(stream)) : undefined,
      relay: relay ? () => call(`${relay}/v1/messages`, anthHeaders, anthDirect(stream)) : undefined,
      go: go ? () => call(`${go}/v1/messages`, anthHeaders, anthDirect(stream)) : undefined,
      litellm: litellm ? () => call(`${litellm}/v1/chat/completions`, lh, viaLitellm('bench-anthropic', stream)) : undefined,
      portkey: portkey ? () => call(`${portkey}/v1/chat/completions`, portkeyHeaders('anthropic', fakeUrl), JSON.stringify({ model: 'm', max_tokens: 256, messages: [{ role: 'user', content: 'Say hello.' }], stream })) : undefined, // chat in, anthropic out
    }]);
  }
  return cases;
}

/** The router's own call for the throughput sweep: chat → openai, whole answer. */
export function routedChat(router: string, routingKey: string): Path {
  const h = { authorization: `Bearer ${routingKey}`, 'content-type': 'application/json' };
  const chat = () => JSON.stringify({ model: 'service/routing', messages: [{ role: 'user', content: 'Say hello.' }], stream: false });
  return () => call(`${router}/chat/chat/completions`, h, chat());
}
