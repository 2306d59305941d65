package dev.troupe.mongo;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.Set;

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.wire.message.MongoMessage;

/**
 * Runs commands that create or drop collections and indexes one at a time.
 *
 * mongo-java-server checks "does the collection exist" and then creates it in two
 * unsynchronized steps, so two clients creating one collection at once (every Troupe
 * process runs ensureIndexes at start) can both pass the check and the second fails
 * with an internal error instead of NamespaceExists. MongoDB makes this atomic; so does
 * this wrapper. Data commands are not affected: they stay concurrent.
 */
final class SerializedDdl {

    private static final Set<String> DDL = Set.of(
        "create", "createindexes", "drop", "dropindexes", "dropdatabase", "renamecollection");

    private SerializedDdl() {
    }

    static MongoBackend wrap(MongoBackend backend) {
        Object lock = new Object();
        return (MongoBackend) Proxy.newProxyInstance(
            MongoBackend.class.getClassLoader(),
            new Class<?>[] {MongoBackend.class},
            (proxy, method, args) -> {
                try {
                    if (isDdl(method, args)) {
                        synchronized (lock) {
                            return method.invoke(backend, args);
                        }
                    }
                    return method.invoke(backend, args);
                } catch (InvocationTargetException e) {
                    throw e.getCause();
                }
            });
    }

    private static boolean isDdl(Method method, Object[] args) {
        String command = null;
        if (method.getName().equals("handleMessage") && args[0] instanceof MongoMessage message) {
            Document doc = message.getDocument();
            command = doc.isEmpty() ? null : doc.keySet().iterator().next();
        } else if (method.getName().equals("handleCommand") && args.length == 4 && args[2] instanceof String name) {
            command = name;
        }
        return command != null && DDL.contains(command.toLowerCase());
    }
}
