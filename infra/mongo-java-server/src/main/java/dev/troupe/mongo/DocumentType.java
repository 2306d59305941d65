package dev.troupe.mongo;

import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.Map;

import org.h2.mvstore.DataUtils;
import org.h2.mvstore.WriteBuffer;
import org.h2.mvstore.type.BasicDataType;
import org.h2.mvstore.type.ObjectDataType;

import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.wire.bson.BsonDecoder;
import de.bwaldvogel.mongo.wire.bson.BsonEncoder;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

/**
 * The value type of the collections' data maps: each document stored as its BSON bytes.
 *
 * H2's ObjectDataType stores an object it does not know (mongo-java-server's Document) with
 * Java serialization: a new ObjectOutputStream, class descriptors and boxed values for every
 * document, each time a page holding it is written (every MVStore commit rewrites each changed
 * page whole, unchanged documents included). A JFR profile of the batch drain found a fifth of
 * the server's samples in Java serialization. BSON is what the documents arrived as and what
 * they leave as (mongo-java-server's own encoder and decoder), smaller and several times faster.
 *
 * A document BSON cannot hold (none that came over the wire, but the server keeps Java values)
 * is stored as before, behind a tag byte, so nothing a client could write is refused here.
 */
final class DocumentType extends BasicDataType<Object> {

    private static final byte BSON = 0;
    private static final byte SERIALIZED = 1;

    /** Pages are written by the commit thread; one scratch buffer per thread, reused. */
    private static final ThreadLocal<ByteBuf> SCRATCH = ThreadLocal.withInitial(() -> Unpooled.buffer(4096));

    private final ObjectDataType fallback = new ObjectDataType();

    @Override
    public void write(WriteBuffer buff, Object value) {
        if (value instanceof Document document) {
            ByteBuf out = SCRATCH.get();
            out.clear();
            try {
                BsonEncoder.encodeDocument(document, out);
                int length = out.readableBytes();
                buff.put(BSON).putVarInt(length).put(out.array(), out.arrayOffset() + out.readerIndex(), length);
                return;
            } catch (RuntimeException notBson) {
                // a value BSON has no type for (IllegalArgumentException), or a map with keys
                // that are not strings (ClassCastException): stored serialized below
            } finally {
                if (out.capacity() > 1 << 20) {
                    SCRATCH.remove();
                }
            }
        }
        buff.put(SERIALIZED);
        fallback.write(buff, value);
    }

    @Override
    public Object read(ByteBuffer buff) {
        byte tag = buff.get();
        if (tag == SERIALIZED) {
            return fallback.read(buff);
        }
        if (tag != BSON) {
            throw new IllegalStateException("unknown document encoding " + tag);
        }
        int length = DataUtils.readVarInt(buff);
        ByteBuf in;
        if (buff.hasArray()) {
            in = Unpooled.wrappedBuffer(buff.array(), buff.arrayOffset() + buff.position(), length);
            buff.position(buff.position() + length);
        } else {
            byte[] bytes = new byte[length];
            buff.get(bytes);
            in = Unpooled.wrappedBuffer(bytes);
        }
        return BsonDecoder.decodeBson(in);
    }

    /** Values are never ordered, only compared for equality (MVMap.replace, remove(key, value)). */
    @Override
    public int compare(Object a, Object b) {
        return a.equals(b) ? 0 : fallback.compare(a, b);
    }

    /**
     * The heap a document takes, roughly: H2 sizes its page cache and splits pages by it. A walk
     * of the document, not an encoding, because it runs on every put.
     */
    @Override
    public int getMemory(Object value) {
        return estimate(value, 0);
    }

    @Override
    public Object[] createStorage(int size) {
        return new Object[size];
    }

    private static int estimate(Object value, int depth) {
        if (value instanceof String s) {
            return 48 + s.length();
        }
        if (depth > 16) {
            return 64;
        }
        if (value instanceof Map<?, ?> map) {
            int size = 64;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                size += 40 + estimate(e.getKey(), depth + 1) + estimate(e.getValue(), depth + 1);
            }
            return size;
        }
        if (value instanceof Collection<?> list) {
            int size = 48;
            for (Object item : list) {
                size += 8 + estimate(item, depth + 1);
            }
            return size;
        }
        return 24;
    }
}
