package dev.troupe.mongo;

import java.lang.reflect.Field;
import java.util.List;

import org.h2.mvstore.MVMap;
import org.h2.mvstore.MVStore;

import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.MongoDatabase;
import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.KeyValue;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import de.bwaldvogel.mongo.backend.h2.H2Collection;
import de.bwaldvogel.mongo.backend.h2.H2Database;

/**
 * mongo-java-server's H2 backend with its unique indexes (the `_id` index included) keyed by
 * {@link KeyValueType}, which writes and compares keys without Java serialization (the values,
 * document positions, are `_id` values and written the same way), and its collections' data
 * maps in the {@link StoreFormat} of this launcher (documents as BSON).
 *
 * The index maps get a new name suffix (`._kv3_`): a map's key order and encoding are part of its file format,
 * so a data file written by the plain backend (`._index_`) or by earlier versions of this
 * class (`._kv_`, which did not order doubles by value; `._kv2_`, which Java-serialized its keys and ordered
 * ObjectIds and dates by those bytes) has those index maps dropped at open, and mongo-java-server
 * rebuilds an empty index from the collection's documents (once).
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
        private static final List<String> LEGACY = List.of("._index_", "._kv_", "._kv2_");

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
            return getFullCollectionNamespace(collectionName) + "._kv3_" + indexName;
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
                new MVMap.Builder<KeyValue, Object>().keyType(new KeyValueType()).valueType(new KeyValueType()));
            return new KeyValueIndex(map, indexName, keys, sparse);
        }

        /** As H2Database opens a collection, with the data map in this launcher's format. */
        @Override
        protected MongoCollection<Object> openOrCreateCollection(String collectionName, CollectionOptions options) {
            String fullName = getFullCollectionNamespace(collectionName);
            MVMap<Object, Document> dataMap = store().openMap("databases." + fullName, StoreFormat.dataMap());
            MVMap<String, Object> metaMap = store().openMap("meta." + fullName);
            return new H2Collection(this, collectionName, options, dataMap, metaMap, cursorRegistry);
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
