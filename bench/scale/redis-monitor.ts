import { connect, type Socket } from 'node:net';

/**
 * MONITOR on every Redis node, counting the commands clients send apart from
 * the commands BullMQ's Lua scripts run inside Redis (MONITOR marks those
 * `[0 lua]`). MONITOR slows Redis down, so benchmarks use it in a separate,
 * small calibration pass only.
 */
export class RedisMonitor {
  client = 0;
  lua = 0;
  private readonly sockets: Socket[] = [];

  static async start(ports: number[]): Promise<RedisMonitor> {
    const m = new RedisMonitor();
    await Promise.all(ports.map((p) => m.watch(p)));
    return m;
  }

  private watch(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => s.write('MONITOR\r\n'));
      this.sockets.push(s);
      let buf = '';
      let ok = false;
      s.on('error', reject);
      s.on('data', (d: Buffer) => {
        buf += d.toString('latin1');
        let i;
        while ((i = buf.indexOf('\r\n')) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 2);
          if (!ok && line === '+OK') {
            ok = true;
            resolve();
            continue;
          }
          if (line.includes(' lua] ')) this.lua++;
          else if (line.startsWith('+')) this.client++;
        }
      });
    });
  }

  reset(): void {
    this.client = 0;
    this.lua = 0;
  }

  close(): void {
    for (const s of this.sockets) s.destroy();
  }
}
