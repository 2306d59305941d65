package dev.troupe.mongo;

import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import org.h2.mvstore.DataUtils;
import org.h2.mvstore.WriteBuffer;
import org.h2.mvstore.type.ObjectDataType;

import de.bwaldvogel.mongo.backend.KeyValue;
import de.bwaldvogel.mongo.backend.Missing;
import de.bwaldvogel.mongo.bson.ObjectId;

/**
 * How {@link KeyValueType} writes keys: a tag byte per value, then the value's own bytes (strings
 * as H2 writes them, numbers as var-ints or raw bits, ObjectIds as their 12 bytes). A KeyValue is
 * a tag and its parts. Anything else (a nested document, an array) is written by H2's
 * ObjectDataType behind its own tag, as every key was before: Java serialization, which for a
 * KeyValue wrote its class descriptor and a boxed list with every page of every index.
 */
final class KeyCodec {

    private static final byte NULL = 0;
    private static final byte MISSING = 1;
    private static final byte INT = 2;
    private static final byte LONG = 3;
    private static final byte STRING = 4;
    private static final byte TRUE = 5;
    private static final byte FALSE = 6;
    private static final byte DOUBLE = 7;
    private static final byte OBJECT_ID = 8;
    private static final byte INSTANT = 9;
    private static final byte KEY = 10;
    private static final byte OTHER = 11;

    private final ObjectDataType other = new ObjectDataType();

    void write(WriteBuffer buff, Object value) {
        if (value instanceof KeyValue key) {
            buff.put(KEY).putVarInt(key.size());
            for (Object part : key) {
                writeValue(buff, part);
            }
        } else {
            writeValue(buff, value);
        }
    }

    Object read(ByteBuffer buff) {
        byte tag = buff.get();
        if (tag != KEY) {
            return readValue(tag, buff);
        }
        int size = DataUtils.readVarInt(buff);
        List<Object> parts = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            parts.add(readValue(buff.get(), buff));
        }
        return new KeyValue(parts);
    }

    /** Rough heap size, for H2's page cache and page splits. */
    int memory(Object value) {
        if (value instanceof KeyValue key) {
            int size = 56;
            for (Object part : key) {
                size += 8 + memory(part);
            }
            return size;
        }
        if (value instanceof String s) {
            return 48 + s.length();
        }
        if (value == null || value instanceof Missing || value instanceof Boolean) {
            return 0;
        }
        if (value instanceof ObjectId || value instanceof Instant) {
            return 48;
        }
        if (value instanceof Number) {
            return 24;
        }
        return other.getMemory(value);
    }

    ObjectDataType other() {
        return other;
    }

    private void writeValue(WriteBuffer buff, Object v) {
        if (v == null) {
            buff.put(NULL);
        } else if (v instanceof Missing) {
            buff.put(MISSING);
        } else if (v instanceof String s) {
            buff.put(STRING).putVarInt(s.length()).putStringData(s, s.length());
        } else if (v instanceof Double d) {
            buff.put(DOUBLE).putLong(Double.doubleToRawLongBits(d));
        } else if (v instanceof Integer i) {
            buff.put(INT).putVarInt(i);
        } else if (v instanceof Long l) {
            buff.put(LONG).putVarLong(l);
        } else if (v instanceof Boolean b) {
            buff.put(b ? TRUE : FALSE);
        } else if (v instanceof ObjectId id) {
            buff.put(OBJECT_ID).put(id.toByteArray());
        } else if (v instanceof Instant t) {
            buff.put(INSTANT).putVarLong(t.getEpochSecond()).putVarInt(t.getNano());
        } else {
            buff.put(OTHER);
            other.write(buff, v);
        }
    }

    private Object readValue(byte tag, ByteBuffer buff) {
        return switch (tag) {
            case NULL -> null;
            case MISSING -> Missing.getInstance();
            case STRING -> DataUtils.readString(buff);
            case DOUBLE -> Double.longBitsToDouble(buff.getLong());
            case INT -> DataUtils.readVarInt(buff);
            case LONG -> DataUtils.readVarLong(buff);
            case TRUE -> Boolean.TRUE;
            case FALSE -> Boolean.FALSE;
            case OBJECT_ID -> {
                byte[] bytes = new byte[12];
                buff.get(bytes);
                yield new ObjectId(bytes);
            }
            case INSTANT -> Instant.ofEpochSecond(DataUtils.readVarLong(buff), DataUtils.readVarInt(buff));
            case OTHER -> other.read(buff);
            default -> throw new IllegalStateException("unknown key encoding " + tag);
        };
    }
}
