package dev.troupe.mongo;

import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantReadWriteLock;

import org.h2.mvstore.MVStore;

/**
 * Makes writes durable before they are acknowledged: one thread commits the MVStore and syncs its
 * file (fsync) for every write that has finished since its last commit, then lets their replies go.
 * Writes that arrive while a commit and sync run share the next one, so a busy server syncs once
 * for many writes (a group commit) and an idle one answers a lone write after one commit.
 *
 * A commit is also a consistent point: a write (one wire command: an insert touches a collection's
 * data map and each of its index maps) runs under the shared side of a lock, and a commit takes the
 * exclusive side, so no commit ever sees half of a command, and a kill -9 leaves the file at the
 * end of some set of whole commands. Nothing else commits: the store runs with auto-commit off.
 */
final class GroupCommit {

    private record Waiter(long ticket, Runnable release) {
    }

    private final MVStore store;
    /** Fair: under a steady stream of writes the committer still gets its turn. */
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock(true);
    private final Object signal = new Object();
    /** Guarded by signal: the last ticket handed out, the last one durable, and who waits. */
    private long written;
    private long durable;
    private boolean closing;
    private final PriorityQueue<Waiter> waiting = new PriorityQueue<>((a, b) -> Long.compare(a.ticket, b.ticket));
    private final Thread committer;
    private static final long GATHER_NANOS = 4_000_000;
    /** The committer's own: when its last commit started. */
    private long lastCommit;

    GroupCommit(MVStore store) {
        this.store = store;
        this.committer = new Thread(this::run, "troupe-group-commit");
        this.committer.setDaemon(true);
        this.committer.start();
    }

    /** Before a command that may change data: no commit starts until {@link #endWrite} is called. */
    void beginWrite() {
        lock.readLock().lock();
    }

    /** After that command, whatever its outcome: returns its ticket, durable once a commit covers it. */
    long endWrite() {
        try {
            synchronized (signal) {
                long ticket = ++written;
                signal.notifyAll();
                return ticket;
            }
        } finally {
            lock.readLock().unlock();
        }
    }

    /** Runs `release` once the ticket is durable: now, or on the committer thread after its sync. */
    void whenDurable(long ticket, Runnable release) {
        synchronized (signal) {
            if (durable < ticket) {
                waiting.add(new Waiter(ticket, release));
                return;
            }
        }
        release.run();
    }

    /** Blocks until the ticket is durable (for a command with no connection to hold a reply on). */
    void awaitDurable(long ticket) throws InterruptedException {
        synchronized (signal) {
            while (durable < ticket) {
                signal.wait();
            }
        }
    }

    /** Commits what is left, then stops the committer (the server no longer takes commands). */
    void close() {
        synchronized (signal) {
            closing = true;
            signal.notifyAll();
        }
        try {
            committer.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void run() {
        try {
            for (;;) {
                synchronized (signal) {
                    while (written == durable && !closing) {
                        signal.wait();
                    }
                    if (written == durable) {
                        return;
                    }
                }
                // At most one commit per GATHER_NANOS: each commit rewrites every page it changed, so
                // writes that share a commit share that work (the CPU, not the fsync, is what it costs).
                long wait = lastCommit + GATHER_NANOS - System.nanoTime();
                if (wait > 0) {
                    LockSupport.parkNanos(wait);
                }
                lastCommit = System.nanoTime();
                long target;
                lock.writeLock().lock();
                try {
                    // Read under the exclusive side: every write that took the lock before the commit is
                    // whole now and in this commit, those still running when the committer woke included.
                    synchronized (signal) {
                        target = written;
                    }
                    store.commit();
                } finally {
                    lock.writeLock().unlock();
                }
                // Outside the lock: writes go on while the file syncs, and join the next group.
                store.sync();
                List<Runnable> released = new ArrayList<>();
                synchronized (signal) {
                    durable = target;
                    while (!waiting.isEmpty() && waiting.peek().ticket <= target) {
                        released.add(waiting.poll().release);
                    }
                    signal.notifyAll();
                }
                for (Runnable r : released) {
                    r.run();
                }
            }
        } catch (Throwable e) {
            // A write that cannot be made durable must never be acknowledged: the held replies are
            // dropped with the process, clients see their connections close and retry elsewhere
            // or after a restart, and the file stays at its last good commit.
            System.err.println("troupe-mongo-java-server: commit failed, stopping without answering the writes it held: " + e);
            e.printStackTrace();
            Runtime.getRuntime().halt(70);
        }
    }
}
