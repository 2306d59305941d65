package dev.troupe.mongo;

import java.util.List;
import java.util.Map.Entry;

import org.h2.mvstore.MVMap;

import de.bwaldvogel.mongo.backend.AbstractUniqueIndex;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.KeyValue;
import de.bwaldvogel.mongo.backend.Missing;

/** mongo-java-server's H2UniqueIndex (whose constructor is package-private), over a map Troupe opens. */
final class KeyValueIndex extends AbstractUniqueIndex<Object> {

    private final MVMap<KeyValue, Object> map;

    KeyValueIndex(MVMap<KeyValue, Object> map, String name, List<IndexKey> keys, boolean sparse) {
        super(name, keys, sparse);
        this.map = map;
    }

    @Override
    protected Object removeDocument(KeyValue key) {
        return map.remove(key);
    }

    @Override
    protected boolean putKeyPosition(KeyValue key, Object position) {
        return map.putIfAbsent(key, Missing.ofNullable(position)) == null;
    }

    @Override
    protected Iterable<Entry<KeyValue, Object>> getIterable() {
        return map.entrySet();
    }

    @Override
    protected Object getPosition(KeyValue key) {
        return map.get(key);
    }

    @Override
    public long getCount() {
        return map.sizeAsLong();
    }

    @Override
    public boolean isEmpty() {
        return map.isEmpty();
    }

    @Override
    public long getDataSize() {
        return getCount();
    }
}
