/**
 * What the router allocates per call (--alloc): V8's sampling heap profiler, started and stopped over the
 * router's inspector for each case, counting objects the GC has already collected too (a plain --heap-prof
 * keeps only what is still alive at the end, which for a proxy is almost nothing). Allocation is what sets
 * how often the young generation fills, and so how often a scavenge lands inside a call.
 */
import type { ChildProcess } from 'node:child_process';
import { WebSocket } from 'undici';

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

/** The inspector's WebSocket URL, as a process started with --inspect=127.0.0.1:0 prints it on stderr. */
export function inspectorUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve) => {
    let seen = '';
    const onData = (d: Buffer) => {
      seen += String(d);
      const m = /ws:\/\/[^\s]+/.exec(seen);
      if (m) {
        child.stderr!.off('data', onData);
        resolve(m[0]);
      }
    };
    child.stderr!.on('data', onData);
  });
}

export class AllocSampler {
  private id = 0;
  private readonly pending = new Map<number, (result: Record<string, unknown>) => void>();

  private constructor(private readonly ws: WebSocket) {
    ws.addEventListener('message', (ev) => {
      const msg = JSON.parse(String(ev.data)) as { id?: number; result?: Record<string, unknown> };
      if (msg.id !== undefined) this.pending.get(msg.id)?.(msg.result ?? {});
    });
  }

  static async connect(url: string): Promise<AllocSampler> {
    const ws = new WebSocket(url);
    await new Promise((resolve, reject) => {
      ws.addEventListener('open', resolve);
      ws.addEventListener('error', reject);
    });
    const s = new AllocSampler(ws);
    await s.send('HeapProfiler.enable');
    return s;
  }

  private send(method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const id = ++this.id;
    this.ws.send(JSON.stringify({ id, method, params }));
    return new Promise((resolve) => this.pending.set(id, resolve));
  }

  start(): Promise<unknown> {
    return this.send('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  }

  /** Stops sampling and prints bytes per call and the functions that allocate most of them. */
  async stop(label: string, calls: number): Promise<void> {
    const { profile } = (await this.send('HeapProfiler.stopSampling')) as { profile: { head: HeapNode } };
    const bySite = new Map<string, number>();
    let total = 0;
    const walk = (n: HeapNode) => {
      if (n.selfSize) {
        const url = n.callFrame.url.replace(/^.*\/(dist|node_modules)\//, '$1/');
        const site = `${n.callFrame.functionName || '(anonymous)'} ${url}:${n.callFrame.lineNumber + 1}`;
        bySite.set(site, (bySite.get(site) ?? 0) + n.selfSize);
        total += n.selfSize;
      }
      n.children.forEach(walk);
    };
    walk(profile.head);
    const top = [...bySite].sort((a, b) => b[1] - a[1]).slice(0, 12);
    console.log(`|   ${label}: the router allocated ~${(total / calls / 1024).toFixed(1)} KiB per call (sampled, warm-up included); most by: ${top.map(([s, b]) => `${s} ${((100 * b) / total).toFixed(0)}%`).join('; ')} |`);
  }

  close(): void {
    this.ws.close();
  }
}
