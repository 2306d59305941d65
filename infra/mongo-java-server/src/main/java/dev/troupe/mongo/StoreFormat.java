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

    /**
     * During an upgrade: the data maps already rewritten, and the copy being made of the next one
     * (named with a `$`, which no database name has, so no database's maps are taken for them).
     */
    private static final String UPGRADED = "$troupe-upgraded";
    private static final String COPY_PREFIX = "$troupe-upgrading.";

    private static final int SLICE = 10_000;

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
     * Brings the store to the current format before the backend opens it. The store must have been
     * opened with no background commit and no commit on memory pressure, so the file changes only at
     * the commits below, each a consistent point: a data map is copied into a map of the new types
     * in slices of {@link #SLICE} documents (so the heap holds one slice's pages, not the database),
     * then takes the old map's name in one commit that also notes it done. A crash or kill at any
     * point leaves every data map either untouched or done; the next start drops a partial copy
     * and goes on from there.
     */
    static void upgrade(MVStore store, String file) {
        int version = store.getStoreVersion();
        if (version > CURRENT) {
            throw new IllegalStateException(file + " is in format " + version + ", newer than this launcher's " + CURRENT);
        }
        if (version == CURRENT) {
            return;
        }
        MVMap<String, String> upgraded = store.openMap(UPGRADED);
        for (String name : new ArrayList<>(store.getMapNames())) {
            if (name.startsWith(DATA_PREFIX) && !upgraded.containsKey(name)) {
                rewrite(store, name, upgraded);
            }
        }
        store.removeMap(upgraded);
        store.setStoreVersion(CURRENT);
        store.commit();
    }

    /** Copies one data map into a map of the current types, which then takes its name. */
    private static void rewrite(MVStore store, String name, MVMap<String, String> upgraded) {
        String copyName = COPY_PREFIX + name;
        if (store.hasMap(copyName)) {
            store.removeMap(copyName);
        }
        MVMap<Object, Object> old = store.openMap(name);
        @SuppressWarnings({"unchecked", "rawtypes"})
        MVMap<Object, Object> copy = (MVMap) store.openMap(copyName, dataMap());
        int n = 0;
        for (Map.Entry<Object, Object> e : old.entrySet()) {
            copy.put(e.getKey(), e.getValue());
            if (++n % SLICE == 0) {
                store.commit();
            }
        }
        store.removeMap(old);
        store.renameMap(copy, name);
        upgraded.put(name, "");
        store.commit();
    }
}
