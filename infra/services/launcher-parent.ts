import { procStat as stat } from './proc-stat.js';

const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh']);

/**
 * Calls `onGone` once the process that started this one has ended: the
 * parent, and under `npm start` the npm process too, which runs the script
 * through `sh -c`. When npm is killed with SIGKILL its shell and this
 * process live on (orphaned, still serving, with their servers); a killed
 * launcher should take everything with it. Linux (/proc); elsewhere it
 * watches nothing. Polls every `everyMs`; the timer does not keep the process up.
 */
export function onLauncherGone(onGone: () => void, everyMs = 500): () => void {
  const parent = process.ppid;
  const watched: { pid: number; start: string }[] = [];
  const p = stat(parent);
  if (!p) return () => undefined;
  watched.push({ pid: parent, start: p.start });
  if (process.env.npm_lifecycle_event && SHELLS.has(p.comm)) {
    const npm = stat(p.ppid);
    if (npm && p.ppid > 1) watched.push({ pid: p.ppid, start: npm.start });
  }
  const timer = setInterval(() => {
    // Gone: no such process, a zombie, or its pid taken by a new process (another start time).
    const gone = watched.some((w) => {
      const now = stat(w.pid);
      return !now || now.state === 'Z' || now.start !== w.start;
    });
    if (gone || process.ppid !== parent) {
      clearInterval(timer);
      onGone();
    }
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
