package dev.troupe.mongo;

import java.util.List;

import org.h2.mvstore.MVStore;

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;

/**
 * Troupe's local MongoDB-wire server: mongo-java-server bound to one loopback port.
 *
 * <pre>java -jar troupe-mongo-java-server.jar --port 27017 [--host 127.0.0.1] [--file data.mv | --memory]</pre>
 *
 * With --file the H2 MVStore backend keeps every database in that one file (what `npm start`
 * runs, so data survives a restart), and a write is acknowledged only once it is committed and
 * synced to that file ({@link DurableWrites}, {@link GroupCommit}), so a kill -9 or a power cut
 * loses no acknowledged write; --memory keeps nothing. Prints one "ready" line on stdout once it
 * listens, and closes the store (flushing it) on SIGTERM/SIGINT.
 */
public final class TroupeMongoServer {

    /**
     * mongo-java-server reports wire version 8 (MongoDB 4.2); the Node.js driver 7 refuses
     * anything below 9 (MongoDB 4.4). Reporting 4.4 keeps the driver on the oldest protocol
     * features it still speaks, which are the ones mongo-java-server implements.
     */
    private static final MongoVersion MONGO_4_4 = new MongoVersion() {
        @Override
        public List<Integer> getVersionArray() {
            return List.of(4, 4, 0);
        }

        @Override
        public int getWireVersion() {
            return 9;
        }
    };

    private TroupeMongoServer() {
    }

    public static void main(String[] args) {
        String host = "127.0.0.1";
        int port = 27017;
        String file = null;
        boolean memory = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--host" -> host = args[++i];
                case "--port" -> port = Integer.parseInt(args[++i]);
                case "--file" -> file = args[++i];
                case "--memory" -> memory = true;
                default -> usage("unknown argument " + args[i]);
            }
        }
        if (memory == (file != null)) usage("give exactly one of --file and --memory");

        MongoBackend backend;
        GroupCommit commits = null;
        if (memory) {
            backend = new MemoryBackend();
        } else {
            H2Backend h2 = openH2(file);
            commits = new GroupCommit(h2.getMvStore());
            backend = h2;
        }
        backend.version(MONGO_4_4);
        MongoBackend served = commits == null ? backend : DurableWrites.wrap(backend, commits);
        MongoServer server = new MongoServer(SerializedDdl.wrap(served));
        server.bind(host, port);
        GroupCommit committer = commits;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // Stop accepting and close connections first, so no write lands after the final
            // commit that closing the backend (H2: the MVStore) makes.
            server.shutdownNow();
            if (committer != null) {
                committer.close();
            }
            backend.close();
        }, "troupe-mongo-shutdown"));
        System.out.println("ready " + (memory ? "memory" : "h2 " + file) + " on " + host + ":" + port);
        System.out.flush();
    }

    /**
     * The H2 backend on its file, brought to this launcher's format. Until the backend is open the
     * file changes only at commits made on purpose: the format upgrade's, and one after the backend
     * has rebuilt the index maps an older launcher wrote (KeyOrderedH2Backend), so a kill during
     * either leaves no half-built map behind (a half-built index would be taken as complete).
     *
     * Then the file changes only at {@link GroupCommit}'s commits, each after whole commands and
     * synced before any of them is answered. MVStore's own background commits stay off (they came
     * once a second and could catch a command half done), and so does its commit when unsaved pages
     * fill a buffer (autoCommitBufferSize 0), which would make a half-built index durable.
     */
    private static H2Backend openH2(String file) {
        MVStore store = new MVStore.Builder().fileName(file).cacheSize(64)
            .autoCommitDisabled().autoCommitBufferSize(0).open();
        try {
            StoreFormat.upgrade(store, file);
            H2Backend backend = new KeyOrderedH2Backend(store);
            store.commit();
            store.sync();
            return backend;
        } catch (RuntimeException | Error e) {
            store.closeImmediately();
            throw e;
        }
    }

    private static void usage(String problem) {
        System.err.println("troupe-mongo-java-server: " + problem);
        System.err.println("usage: --port N [--host 127.0.0.1] (--file PATH | --memory)");
        System.exit(2);
    }
}
