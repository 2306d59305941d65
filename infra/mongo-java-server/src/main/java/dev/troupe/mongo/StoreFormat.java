package dev.troupe.mongo;

import java.util.ArrayList;
import java.util.Map;

import org.h2.mvstore.MVMap;
import org.h2.mvstore.MVStore;

import de.bwaldvogel.mongo.bson.Document;

/**
 * The format of a Troupe H2 file, kept in the MVStore's own store version, and the upgrade of
 * files written by older launchers.
 *
 * <ul>
 * <li>0 (H2's default: every launcher before this one): the collections' data maps keyed and
 * valued by H2's ObjectDataType, documents Java-serialized.</li>
 * <li>1: data maps keyed by {@link KeyValueType} and valued by {@link DocumentType} (BSON).</li>
 * </ul>
 *
 * mongo-java-server names each collection's data map {@code databases.<db>.<collection>}; the
 * types of a map are not written in the file, so a launcher must know them before it opens a map.
 */
final class StoreFormat {

    static final int CURRENT = 1;

    private static final String DATA_PREFIX = "databases.";

    private StoreFormat() {
    }

    /** How a collection's data map is opened in the current format. */
    static MVMap.Builder<Object, Document> dataMap() {
        @SuppressWarnings({"unchecked", "rawtypes"})
        MVMap.Builder<Object, Document> builder = (MVMap.Builder) new MVMap.Builder<Object, Object>()
            .keyType(new KeyValueType())
            .valueType(new DocumentType());
        return builder;
    }

    /**
     * Brings the file to the current format before the server opens it. The store is opened with
     * no background commit and no commit on memory pressure, and the whole upgrade is one commit:
     * a crash or kill during it leaves the file as it was, and the next start upgrades again.
     */
    static void upgrade(String file) {
        MVStore store = new MVStore.Builder().fileName(file).autoCommitDisabled().autoCommitBufferSize(0).open();
        boolean done = false;
        try {
            int version = store.getStoreVersion();
            if (version > CURRENT) {
                throw new IllegalStateException(file + " is in format " + version + ", newer than this launcher's " + CURRENT);
            }
            if (version < CURRENT) {
                for (String name : new ArrayList<>(store.getMapNames())) {
                    if (name.startsWith(DATA_PREFIX)) {
                        rewrite(store, name);
                    }
                }
                store.setStoreVersion(CURRENT);
                store.commit();
            }
            done = true;
        } finally {
            if (done) {
                store.close();
            } else {
                store.closeImmediately();
            }
        }
    }

    /** Copies one data map into a map of the current types, which then takes its name. */
    private static void rewrite(MVStore store, String name) {
        MVMap<Object, Object> old = store.openMap(name);
        @SuppressWarnings({"unchecked", "rawtypes"})
        MVMap<Object, Object> fresh = (MVMap) store.openMap("upgrading." + name, dataMap());
        for (Map.Entry<Object, Object> e : old.entrySet()) {
            fresh.put(e.getKey(), e.getValue());
        }
        store.removeMap(old);
        store.renameMap(fresh, name);
    }
}
