package dev.troupe.mongo;

import java.lang.reflect.Field;
import java.util.List;

import org.h2.mvstore.MVMap;
import org.h2.mvstore.MVStore;

import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.MongoDatabase;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.KeyValue;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import de.bwaldvogel.mongo.backend.h2.H2Database;

/**
 * mongo-java-server's H2 backend with its unique indexes (the `_id` index included) keyed by
 * {@link KeyValueType}, which compares keys without Java serialization.
 *
 * The index maps get a new name suffix (`._kv2_`): a map's key order is part of its file format,
 * so a data file written by the plain backend (`._index_`) or by the first version of this
 * class (`._kv_`, which did not order doubles by value) has those index maps dropped at open,
 * and mongo-java-server rebuilds an empty index from the collection's documents (once).
 */
final class KeyOrderedH2Backend extends H2Backend {

    KeyOrderedH2Backend(MVStore store) {
        super(store);
    }

    @Override
    protected MongoDatabase openOrCreateDatabase(String databaseName) {
        return new Database(databaseName, getMvStore(), getCursorRegistry());
    }

    private static final class Database extends H2Database {

        /**
         * H2Database opens the indexes from its constructor, before a subclass's own fields are
         * set, so the store is read from the superclass's field.
         */
        private static final Field STORE;

        /** Name infixes of index maps in older key orders. */
        private static final List<String> LEGACY = List.of("._index_", "._kv_");

        static {
            try {
                STORE = H2Database.class.getDeclaredField("mvStore");
                STORE.setAccessible(true);
            } catch (NoSuchFieldException e) {
                throw new IllegalStateException("mongo-java-server's H2Database has no mvStore field", e);
            }
        }

        Database(String databaseName, MVStore store, CursorRegistry cursorRegistry) {
            super(databaseName, store, cursorRegistry);
        }

        private MVStore store() {
            try {
                return (MVStore) STORE.get(this);
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        }

        private String mapName(String collectionName, String indexName) {
            return getFullCollectionNamespace(collectionName) + "._kv2_" + indexName;
        }

        @Override
        protected Index<Object> openOrCreateUniqueIndex(String collectionName, String indexName, List<IndexKey> keys, boolean sparse) {
            MVStore store = store();
            for (String legacy : LEGACY) {
                String name = getFullCollectionNamespace(collectionName) + legacy + indexName;
                if (store.hasMap(name)) {
                    store.removeMap(name);
                }
            }
            MVMap<KeyValue, Object> map = store.openMap(mapName(collectionName, indexName),
                new MVMap.Builder<KeyValue, Object>().keyType(new KeyValueType()));
            return new KeyValueIndex(map, indexName, keys, sparse);
        }

        @Override
        protected void dropIndex(MongoCollection<Object> collection, String indexName) {
            super.dropIndex(collection, indexName);
            String name = mapName(collection.getCollectionName(), indexName);
            if (store().hasMap(name)) {
                store().removeMap(name);
            }
        }
    }
}
