package dev.troupe.mongo;

import java.util.List;
import java.util.Map.Entry;

import org.h2.mvstore.MVMap;

import de.bwaldvogel.mongo.backend.AbstractUniqueIndex;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.KeyValue;
import de.bwaldvogel.mongo.backend.Missing;
import de.bwaldvogel.mongo.bson.Document;

/** mongo-java-server's H2UniqueIndex (whose constructor is package-private), over a map Troupe opens. */
final class KeyValueIndex extends AbstractUniqueIndex<Object> {

    private final MVMap<KeyValue, Object> map;

    KeyValueIndex(MVMap<KeyValue, Object> map, String name, List<IndexKey> keys, boolean sparse) {
        super(name, keys, sparse);
        this.map = map;
    }

    /**
     * Upstream takes a query only when its fields are exactly the index's, so a fenced write
     * ({@code {_id: x, last_sequence: {$lte: n}}}, the projection writer's) scanned the whole
     * collection. When the query also names every key of this index, the index finds the
     * candidates by those keys alone: the collection still matches each candidate against the
     * whole query, so the answer is the same.
     */
    @Override
    public synchronized boolean canHandle(Document query) {
        if (super.canHandle(query)) return true;
        return query.keySet().containsAll(keySet()) && super.canHandle(byKeys(query));
    }

    @Override
    public synchronized Iterable<Object> getPositions(Document query) {
        return super.getPositions(query.keySet().equals(keySet()) ? query : byKeys(query));
    }

    private Document byKeys(Document query) {
        Document keysOnly = new Document();
        for (String key : keys()) keysOnly.put(key, query.get(key));
        return keysOnly;
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
