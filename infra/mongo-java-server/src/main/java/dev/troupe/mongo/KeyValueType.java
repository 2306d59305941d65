package dev.troupe.mongo;

import java.nio.ByteBuffer;
import java.time.Instant;

import org.h2.mvstore.WriteBuffer;
import org.h2.mvstore.type.BasicDataType;

import de.bwaldvogel.mongo.backend.KeyValue;
import de.bwaldvogel.mongo.backend.Missing;
import de.bwaldvogel.mongo.bson.ObjectId;

/**
 * The key type of the unique-index maps (`_id` included) and of the collections' data maps (keyed
 * by `_id` values), written by {@link KeyCodec} and compared without serializing.
 *
 * H2's ObjectDataType orders an object it does not know (mongo-java-server's KeyValue) by its
 * serialized bytes, so every step of every index lookup's binary search ran two Java
 * serializations: a JFR profile of the ledger benchmark found about a third of the server's
 * CPU there. This type orders keys whose parts are strings, numbers, booleans, null, ObjectIds
 * or dates by those values (mongo-java-server normalizes index numbers to doubles), so a B-tree
 * lookup compares plain strings; it orders every other key (one holding a nested document or
 * an array, which no Troupe index has) by the Java-serialized bytes, as H2 did. Two keys are equal
 * exactly when they were before (same classes, same values: uniqueness is unchanged), and the
 * order is total: every such "plain" key sorts before every other one. A data map's keys (single `_id`
 * values, not KeyValues) are ordered the same way.
 */
final class KeyValueType extends BasicDataType<Object> {

    private final KeyCodec codec = new KeyCodec();

    @Override
    public void write(WriteBuffer buff, Object value) {
        codec.write(buff, value);
    }

    @Override
    public Object read(ByteBuffer buff) {
        return codec.read(buff);
    }

    @Override
    public int getMemory(Object value) {
        return codec.memory(value);
    }

    @Override
    public Object[] createStorage(int size) {
        return new Object[size];
    }

    @Override
    public int compare(Object a, Object b) {
        if (a == b) {
            return 0;
        }
        boolean keyX = a instanceof KeyValue;
        if (keyX != b instanceof KeyValue) {
            // one map holds one kind; this keeps the order total all the same
            return keyX ? 1 : -1;
        }
        boolean plainX = keyX ? isPlain((KeyValue) a) : rank(a) >= 0;
        boolean plainY = keyX ? isPlain((KeyValue) b) : rank(b) >= 0;
        if (plainX != plainY) {
            return plainX ? -1 : 1;
        }
        if (plainX) {
            return keyX ? comparePlain((KeyValue) a, (KeyValue) b) : compareValues(a, b);
        }
        return codec.other().compare(a, b);
    }

    private static boolean isPlain(KeyValue key) {
        for (Object v : key) {
            if (rank(v) < 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * null/missing, integers, strings, booleans, doubles, ObjectIds, dates; -1 for anything else.
     * Integers and doubles are ranked apart, so each rank has a total order of its own.
     */
    private static int rank(Object v) {
        if (v == null || v instanceof Missing) {
            return 0;
        }
        if (v instanceof Integer || v instanceof Long) {
            return 1;
        }
        if (v instanceof String) {
            return 2;
        }
        if (v instanceof Boolean) {
            return 3;
        }
        if (v instanceof Double) {
            return 4;
        }
        if (v instanceof ObjectId) {
            return 5;
        }
        if (v instanceof Instant) {
            return 6;
        }
        return -1;
    }

    private static int comparePlain(KeyValue x, KeyValue y) {
        int c = Integer.compare(x.size(), y.size());
        for (int i = 0; c == 0 && i < x.size(); i++) {
            c = compareValues(x.get(i), y.get(i));
        }
        return c;
    }

    /**
     * Two values of rank 0 or more: by rank, then by value, then by class (null before Missing,
     * Integer before Long), so 0 means the same class and value: the same serialized bytes, the
     * equality ObjectDataType gave. A lookup that finds its key never serializes.
     */
    private static int compareValues(Object v, Object w) {
        int rv = rank(v);
        int c = Integer.compare(rv, rank(w));
        if (c != 0) {
            return c;
        }
        return switch (rv) {
            case 0 -> Boolean.compare(v != null, w != null);
            case 1 -> {
                int byValue = Long.compare(((Number) v).longValue(), ((Number) w).longValue());
                yield byValue != 0 ? byValue : Boolean.compare(v instanceof Long, w instanceof Long);
            }
            case 2 -> ((String) v).compareTo((String) w);
            case 3 -> Boolean.compare((Boolean) v, (Boolean) w);
            case 4 -> Double.compare((Double) v, (Double) w);
            case 5 -> ((ObjectId) v).compareTo((ObjectId) w);
            case 6 -> ((Instant) v).compareTo((Instant) w);
            default -> 0;
        };
    }
}
