import type { Schedule } from '../../typescript/src/client.js';
import { byId, errorText, h, status } from './dom.js';
import { client, state } from './state.js';

function stateOf(s: Schedule): string {
  return s.paused_reason === 'agent_deleted' ? 'agent deleted' : s.paused ? 'paused' : 'active';
}

/** One schedule's ticks, newest first: what each did and the session it opened. */
async function loadRuns(s: Schedule): Promise<void> {
  const { runs } = await client().schedules.runs(s.id, { limit: 50 });
  byId('schedule-runs-title').textContent = `Runs of ${s.name ?? s.id}`;
  byId('schedule-runs').hidden = false;
  const body = byId('schedule-runs').querySelector('tbody')!;
  body.replaceChildren(
    ...runs.map((r) => h('tr', { 'data-run': r.scheduled_for }, h('td', {}, r.scheduled_for), h('td', { class: `st-${r.status}` }, r.status), h('td', {}, r.session_id), h('td', {}, r.error ?? '-'))),
  );
  if (!runs.length) body.append(h('tr', {}, h('td', { colspan: '4', class: 'muted' }, 'No runs yet.')));
}

function act(label: string, run: () => Promise<unknown>, done: string): HTMLButtonElement {
  return h('button', { type: 'button', onclick: () => void run().then(() => (status(done), loadSchedules())).catch((err) => status(errorText(err), true)) }, label);
}

/** The selected agent's schedules, with pause, resume and their runs. */
export async function loadSchedules(): Promise<void> {
  const body = byId('schedules-table').querySelector('tbody')!;
  const agentId = state.agentId;
  byId('schedule-agent').textContent = agentId ? `of ${agentId}` : '';
  byId('schedule-hint').hidden = !!agentId;
  byId('schedule-runs').hidden = true;
  if (!agentId) return void body.replaceChildren();
  const { schedules } = await client().schedules.list(agentId, { limit: 100 });
  body.replaceChildren(
    ...schedules.map((s) =>
      h(
        'tr',
        { 'data-schedule': s.id },
        h('td', {}, s.id),
        h('td', {}, s.name ?? '-'),
        h('td', {}, s.cron),
        h('td', {}, s.timezone),
        h('td', { class: 'schedule-state' }, stateOf(s)),
        h('td', {}, s.next_run_at ?? '-'),
        h(
          'td',
          {},
          s.paused_reason === 'agent_deleted' ? null : s.paused ? act('Resume', () => client().schedules.resume(s.id), `Resumed ${s.id}.`) : act('Pause', () => client().schedules.pause(s.id), `Paused ${s.id}.`),
          h('button', { type: 'button', onclick: () => void loadRuns(s).catch((err) => status(errorText(err), true)) }, 'Runs'),
        ),
      ),
    ),
  );
  if (!schedules.length) body.append(h('tr', {}, h('td', { colspan: '7', class: 'muted' }, 'No schedules. Create one with POST /v1/agents/{agent_id}/schedules or `troupe schedules create` (docs/schedules.md).')));
}

export function wireSchedules(): void {
  byId('schedule-refresh').addEventListener('click', () => void loadSchedules().catch((err) => status(errorText(err), true)));
}
