import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { MongoNetworkError } from 'mongodb';

/**
 * A fix for a bug in the MongoDB driver (7.9, `Connection.writeCommand`; issue
 * 16, docs/reliability.md). The driver writes a command and, when
 * `socket.write` returns false, waits for 'drain' or 'error', never 'close'.
 * After the server closes a connection, Node destroys the socket when it has
 * read the FIN but emits 'close' only later in the event loop; a command
 * written in between goes nowhere, no 'error' follows, and the operation never
 * settles. It wedged server monitors (a process that never reached MongoDB
 * again) and operations (a worker's turn, and every turn queued behind it).
 *
 * The wrapper refuses a write to a socket already destroyed and ends a wait
 * that the socket's 'close' makes hopeless, both with the network error the
 * driver itself raises for a closed connection, so it retries, marks the
 * server Unknown and clears the pool as for any dropped connection. It reaches
 * into a private class: if a driver release renames it, nothing is installed
 * (test/faults/mongo-watchdog.test.ts then fails) and the watchdog still
 * replaces a client whose monitor wedges.
 */
interface DriverConnection {
  id: string | number;
  address: string;
  closed: boolean;
  socket: NodeJS.EventEmitter & { destroyed: boolean };
  cleanup(err: Error): void;
}
type WriteCommand = (this: DriverConnection, ...args: unknown[]) => Promise<void>;

const FIXED = Symbol.for('troupe.mongodb.destroyedSocketWrites');

/** Where the fix caught a write: 'caught' with 'before_write' (socket already destroyed) or 'waiting_for_drain'. */
export const driverFixEvents = new EventEmitter();
export type CaughtWhere = 'before_write' | 'waiting_for_drain';

function connectionClass(): { prototype: Record<string | symbol, unknown> } | null {
  try {
    const require = createRequire(__filename);
    const mod = require('mongodb/lib/cmap/connection') as { Connection?: { prototype: Record<string | symbol, unknown> } };
    const proto = mod.Connection?.prototype;
    return proto && typeof proto.writeCommand === 'function' && typeof proto.cleanup === 'function' ? mod.Connection! : null;
  } catch {
    return null;
  }
}

/** Installs the fix once per process; returns whether it is in place. `uninstall` is for the test that shows the bug. */
export function installDriverFix(): boolean {
  const Connection = connectionClass();
  if (!Connection) return false;
  const proto = Connection.prototype;
  if (proto[FIXED]) return true;
  const original = proto.writeCommand as WriteCommand;
  const fixed: WriteCommand = async function (this: DriverConnection, ...args) {
    const socket = this.socket;
    const closedError = () => new MongoNetworkError(`connection ${this.id} to ${this.address} closed`);
    if (socket.destroyed) {
      const err = closedError();
      this.cleanup(err);
      driverFixEvents.emit('caught', 'before_write' satisfies CaughtWhere);
      throw err;
    }
    let onClose!: () => void;
    const closed = new Promise<never>((_, reject) => {
      onClose = () => {
        driverFixEvents.emit('caught', 'waiting_for_drain' satisfies CaughtWhere);
        reject(closedError());
      };
    });
    socket.once('close', onClose);
    try {
      return await Promise.race([original.apply(this, args), closed]);
    } finally {
      socket.off('close', onClose);
    }
  };
  proto.writeCommand = fixed;
  proto[FIXED] = original;
  return true;
}

export function uninstallDriverFix(): void {
  const proto = connectionClass()?.prototype;
  if (!proto?.[FIXED]) return;
  proto.writeCommand = proto[FIXED];
  delete proto[FIXED];
}
