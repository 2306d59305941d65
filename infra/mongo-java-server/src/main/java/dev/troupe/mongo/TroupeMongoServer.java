package dev.troupe.mongo;

import java.util.List;

import org.h2.mvstore.MVStore;

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;

/**
 * Troupe's local MongoDB-wire server: mongo-java-server bound to one loopback port.
 *
 * <pre>java -jar troupe-mongo-java-server.jar --port 27017 [--host 127.0.0.1] [--file data.mv | --memory]</pre>
 *
 * With --file the H2 MVStore backend keeps every database in that one file (what `npm start`
 * runs, so data survives a restart); --memory keeps nothing. Prints one "ready" line on stdout
 * once it listens, and closes the store (flushing it) on SIGTERM/SIGINT.
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

        MongoBackend backend = memory ? new MemoryBackend() : openH2(file);
        backend.version(MONGO_4_4);
        MongoServer server = new MongoServer(SerializedDdl.wrap(backend));
        server.bind(host, port);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // Stop accepting and close connections first, so no write lands after the final
            // commit that closing the backend (H2: the MVStore) makes.
            server.shutdownNow();
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
     * Then MVStore commits in the background once a second, and on close: a kill -9 loses at most
     * that last second, and the file stays readable (append-only chunks). Commits are made by time
     * only (autoCommitBufferSize 0), not also when unsaved pages fill a buffer: those were rare
     * under load (commits stayed under one a second) and would make a half-built index durable.
     */
    private static MongoBackend openH2(String file) {
        MVStore store = new MVStore.Builder().fileName(file).cacheSize(64)
            .autoCommitDisabled().autoCommitBufferSize(0).open();
        try {
            StoreFormat.upgrade(store, file);
            MongoBackend backend = new KeyOrderedH2Backend(store);
            store.commit();
            store.setAutoCommitDelay(1000);
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
