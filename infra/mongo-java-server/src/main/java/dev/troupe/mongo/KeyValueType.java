package dev.troupe.mongo;

import org.h2.mvstore.type.ObjectDataType;

import de.bwaldvogel.mongo.backend.KeyValue;
import de.bwaldvogel.mongo.backend.Missing;

/**
 * The key type of the unique-index maps (`_id` included): stored exactly as H2's ObjectDataType
 * stores them (Java serialization), but compared without serializing.
 *
 * ObjectDataType orders an object it does not know (mongo-java-server's KeyValue) by its
 * serialized bytes, so every step of every index lookup's binary search ran two Java
 * serializations: a JFR profile of the ledger benchmark found about a third of the server's
 * CPU there. This type orders keys whose parts are strings, numbers, booleans or null by
 * those values (mongo-java-server normalizes index numbers to doubles) (a B-tree lookup then compares plain strings), and breaks ties, and orders
 * every other key, by the serialized bytes as before. So two keys are equal exactly when
 * they were before (uniqueness is unchanged), and the order is total: every such "plain"
 * key sorts before every other one.
 */
final class KeyValueType extends ObjectDataType {

    @Override
    public int compare(Object a, Object b) {
        if (a == b) {
            return 0;
        }
        if (a instanceof KeyValue x && b instanceof KeyValue y) {
            boolean plainX = isPlain(x);
            boolean plainY = isPlain(y);
            if (plainX != plainY) {
                return plainX ? -1 : 1;
            }
            if (plainX) {
                int c = comparePlain(x, y);
                if (c != 0) {
                    return c;
                }
            }
        }
        return super.compare(a, b);
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
     * null/missing, integers, strings, booleans, doubles; -1 for anything else. Integers and
     * doubles are ranked apart, so each rank has a total order of its own.
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
        return -1;
    }

    private static int comparePlain(KeyValue x, KeyValue y) {
        int c = Integer.compare(x.size(), y.size());
        for (int i = 0; c == 0 && i < x.size(); i++) {
            Object v = x.get(i);
            Object w = y.get(i);
            int rv = rank(v);
            c = Integer.compare(rv, rank(w));
            if (c != 0) {
                break;
            }
            c = switch (rv) {
                case 1 -> Long.compare(((Number) v).longValue(), ((Number) w).longValue());
                case 2 -> ((String) v).compareTo((String) w);
                case 3 -> Boolean.compare((Boolean) v, (Boolean) w);
                case 4 -> Double.compare((Double) v, (Double) w);
                default -> 0;
            };
        }
        return c;
    }
}
