package dev.troupe.mongo;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.Set;

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.wire.message.MongoMessage;
import io.netty.channel.Channel;

/**
 * Acknowledges a write only once it is durable: every command that may change data runs as one
 * unit of {@link GroupCommit} and its reply is held ({@link DurableReplies}) until a commit and
 * file sync cover it, whatever write concern the client asked for (so `w: 1`, `j: true` and the
 * default are all durable; MongoDB gives that only with `j: true`, which Troupe asks for).
 *
 * Read commands are named; anything else counts as a write, so a command this list does not know
 * costs at most a wait for the next sync and is never acknowledged before it is on disk.
 */
final class DurableWrites {

    private static final Set<String> READS = Set.of(
        "find", "getmore", "count", "distinct", "listcollections", "listindexes", "listdatabases",
        "hello", "ismaster", "ping", "buildinfo", "serverstatus", "dbstats", "collstats", "getparameter",
        "killcursors", "endsessions", "getlasterror", "whatsmyuri", "connectionstatus", "hostinfo",
        "getcmdlineopts", "getlog", "explain");

    private DurableWrites() {
    }

    static MongoBackend wrap(MongoBackend backend, GroupCommit commits) {
        return (MongoBackend) Proxy.newProxyInstance(
            MongoBackend.class.getClassLoader(),
            new Class<?>[] {MongoBackend.class},
            (proxy, method, args) -> {
                Channel channel = writeChannel(method, args);
                if (channel == null && !isChannelLessWrite(method, args)) {
                    return invoke(backend, method, args);
                }
                commits.beginWrite();
                long ticket;
                try {
                    return invoke(backend, method, args);
                } finally {
                    // Also when the command failed: a failed insertMany or update may have changed some documents.
                    ticket = commits.endWrite();
                    if (channel != null) {
                        DurableReplies.holdNextReply(channel, ticket, commits);
                    } else {
                        commits.awaitDurable(ticket);
                    }
                }
            });
    }

    private static Object invoke(MongoBackend backend, Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(backend, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /** The connection a write command came on; null for a read or for anything but a command. */
    private static Channel writeChannel(Method method, Object[] args) {
        if (method.getName().equals("handleMessage") && args[0] instanceof MongoMessage message) {
            Document doc = message.getDocument();
            if (doc.isEmpty()) {
                return null;
            }
            String command = doc.keySet().iterator().next();
            return isWrite(command, doc) ? message.getChannel() : null;
        }
        if (method.getName().equals("handleCommand") && args.length == 4 && args[2] instanceof String command
            && args[3] instanceof Document query && isWrite(command, query)) {
            return (Channel) args[0];
        }
        return null;
    }

    /** A write command that came with no connection (not from the wire): it waits for its sync. */
    private static boolean isChannelLessWrite(Method method, Object[] args) {
        if (method.getName().equals("dropDatabase")) {
            return true;
        }
        return method.getName().equals("handleCommand") && args.length == 4 && args[0] == null
            && args[2] instanceof String command && args[3] instanceof Document query && isWrite(command, query);
    }

    private static boolean isWrite(String command, Document query) {
        String name = command.toLowerCase();
        if (name.equals("aggregate")) {
            return query.get("pipeline") instanceof List<?> stages && stages.stream()
                .anyMatch(s -> s instanceof Document stage && (stage.containsKey("$out") || stage.containsKey("$merge")));
        }
        return !READS.contains(name);
    }
}
