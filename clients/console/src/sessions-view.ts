import type { OnBusy, Session } from '../../typescript/src/client.js';
import { TroupeApiError } from '../../typescript/src/errors.js';
import { byId, clear, errorText, h, status } from './dom.js';
import { client, state } from './state.js';
import { renderPending } from './tool-form.js';
import { Transcript } from './transcript.js';

let streamStop: AbortController | null = null;

export async function loadAgents(onSelect: (agentId: string) => void): Promise<void> {
  const list = byId('agents');
  const { agents } = await client().agents.list({ limit: 100 });
  list.replaceChildren(
    ...agents.map((a) =>
      h(
        'li',
        {
          'data-agent': a.id,
          onclick: (e: Event) => {
            for (const li of list.children) li.classList.remove('selected');
            (e.currentTarget as HTMLElement).classList.add('selected');
            state.agentId = a.id;
            (byId('new-session') as HTMLButtonElement).disabled = false;
            onSelect(a.id);
          },
        },
        a.name,
        h('br'),
        h('small', {}, a.id),
      ),
    ),
  );
  if (!agents.length) list.append(h('li', { class: 'muted' }, 'No agents yet: deploy one with `troupe deploy <folder>`.'));
}

function metadataFilter(): Record<string, string> {
  const raw = (byId('metadata-filter') as HTMLInputElement).value;
  const out: Record<string, string> = {};
  for (const pair of raw.split(',').map((s) => s.trim()).filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq < 1) throw new Error(`"${pair}" is not key=value`);
    out[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return out;
}

/** Sessions the list shows, and the filtered pages it reads at most to find them (each looks at 1,000 sessions). */
const SHOWN = 50;
const FILTERED_PAGES = 10;
/** The latest list asked for: a slower, older answer must not replace it. */
let listAsked = 0;

/**
 * The newest sessions that match the filter. A filtered page of the API looks at 1,000 sessions at most and may
 * come back short, even empty, with more to read: the list reads on until it has SHOWN sessions, the sessions end,
 * or it has read FILTERED_PAGES pages, and then says how far back it looked instead of "No sessions match".
 */
export async function loadSessions(): Promise<void> {
  const asked = ++listAsked;
  const list = byId('sessions');
  const metadata = metadataFilter();
  let page = await client().sessions.list({ limit: SHOWN, metadata });
  const sessions = [...page.sessions];
  for (let read = 1; page.has_more && page.next_cursor && sessions.length < SHOWN && read < FILTERED_PAGES; read++) {
    page = await client().sessions.list({ limit: SHOWN - sessions.length, metadata, after: page.next_cursor });
    sessions.push(...page.sessions);
  }
  if (asked !== listAsked) return;
  list.replaceChildren(...sessions.map(sessionItem));
  if (page.has_more && sessions.length < SHOWN) list.append(h('li', { class: 'muted', 'data-more': '' }, `Searched the newest ${FILTERED_PAGES * 1000} sessions; older ones may match too.`));
  else if (!sessions.length) list.append(h('li', { class: 'muted' }, 'No sessions match.'));
}

function sessionItem(s: Session): HTMLLIElement {
  const meta = Object.entries(s.metadata).map(([k, v]) => `${k}=${v}`).join(', ');
  return h(
    'li',
    { 'data-session': s.id, class: s.id === state.sessionId ? 'selected' : '', onclick: () => void openSession(s.id).catch((e) => status(errorText(e), true)) },
    s.id,
    h('br'),
    h('small', {}, `${s.status} · ${s.last_message_status ?? 'no messages'}${meta ? ` · ${meta}` : ''}`),
  );
}

/** The latest refresh asked for: answers can come back out of order, and an older list must not replace a newer one. */
let pendingAsked = 0;

async function refreshPending(sessionId: string): Promise<void> {
  const asked = ++pendingAsked;
  const calls = await client().sessions.pendingToolCalls(sessionId);
  if (state.sessionId !== sessionId || asked !== pendingAsked) return;
  renderPending(byId('pending'), sessionId, calls, () => {
    status('Result submitted.');
    void refreshPending(sessionId);
  });
}

/** Shows a session and follows its stream until another one is opened. */
export async function openSession(sessionId: string): Promise<void> {
  streamStop?.abort();
  delete byId('session').dataset.stream;
  const stop = new AbortController();
  streamStop = stop;
  state.sessionId = sessionId;
  for (const li of byId('sessions').children) li.classList.toggle('selected', (li as HTMLElement).dataset.session === sessionId);
  // The pane is emptied first: left under an error about this session (deleted since the list was read, say), the
  // previous session's transcript and composer would read as this one's, and a message typed there would go here.
  byId('session-title').textContent = `Session ${sessionId}`;
  byId('session-status').textContent = '';
  byId('composer').hidden = true;
  const list = byId('transcript');
  clear(list);
  clear(byId('pending'));
  const s = await client().sessions.get(sessionId);
  if (state.sessionId !== sessionId) return;
  byId('session-status').textContent = `agent ${s.agent_id} · version ${s.version_id} · llm ${s.llm_id}`;
  // The choice starts at the session's own default (set at creation), which is what a message without one does.
  byId<HTMLSelectElement>('on-busy').value = s.on_busy;
  byId('composer').hidden = false;
  const transcript = new Transcript(list);
  void refreshPending(sessionId);
  void (async () => {
    try {
      // fetch-based SSE with the Authorization header (EventSource cannot send one); resumes by itself.
      const live = byId('session');
      const onOpen = () => void (live.dataset.stream = 'open');
      const onReconnect = () => (delete live.dataset.stream, status('Stream dropped; resuming…'));
      for await (const item of client().sessions.stream(sessionId, { deltas: true, signal: stop.signal, onOpen, onReconnect })) {
        transcript.add(item);
        if (['tool.call_requested', 'tool.result_submitted', 'tool.call_failed', 'message.status_changed', 'user.tool_confirmation'].includes(item.type)) void refreshPending(sessionId);
        if (item.type === 'session.status_changed') void loadSessions().catch(() => undefined);
      }
    } catch (err) {
      if (!stop.signal.aborted) status(`Stream stopped: ${errorText(err)}`, true);
    }
  })();
}

export function wireSessions(): void {
  byId('session-filter').addEventListener('submit', (e) => {
    e.preventDefault();
    status('');
    loadSessions().catch((err) => {
      // The earlier list stays out from under the error: it does not match the filter asked for.
      clear(byId('sessions'));
      status(errorText(err), true);
    });
  });
  byId('new-session').addEventListener('click', () => {
    if (!state.agentId) return;
    client()
      .sessions.create(state.agentId)
      .then(async (s) => {
        await loadSessions();
        await openSession(s.id);
      })
      .catch((err) => status(errorText(err), true));
  });
  byId('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const input = byId<HTMLInputElement>('message');
    const text = input.value.trim();
    if (!text || !state.sessionId) return;
    const onBusy = byId<HTMLSelectElement>('on-busy').value as OnBusy;
    client()
      .sessions.send(state.sessionId, text, { onBusy })
      .then(() => (input.value = ''))
      .catch((err) => status(sendError(err), true));
  });
}

/** A refusal by `reject` says what happened and what the other choices do; the typed text stays in the box. */
function sendError(err: unknown): string {
  if (err instanceof TroupeApiError && err.code === 'session_busy') {
    return 'Not sent: the session is busy (a message is running or queued) and "If busy" is reject. Choose enqueue to wait its turn, or interrupt or rollback to stop the running message.';
  }
  return errorText(err);
}
