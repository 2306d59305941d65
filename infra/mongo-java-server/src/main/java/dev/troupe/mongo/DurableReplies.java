package dev.troupe.mongo;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.util.AttributeKey;

/**
 * Holds a connection's reply to a write until that write is durable ({@link GroupCommit}).
 *
 * mongo-java-server answers each command on the connection's event-loop thread as soon as its
 * backend returns. Blocking that thread until the sync would also stall every other connection
 * sharing the loop, and would cap a group at the number of loops; so the command runs as before and
 * only its reply waits, here, at the outbound end of the connection's pipeline. A driver sends one
 * command at a time on a connection, so holding a reply never reorders replies.
 */
final class DurableReplies extends ChannelOutboundHandlerAdapter {

    private static final String NAME = "troupe-durable-replies";

    /** The ticket of the write whose reply is the next one the connection writes. */
    private static final AttributeKey<Long> TICKET = AttributeKey.valueOf("troupe-write-ticket");

    private final GroupCommit commits;

    private DurableReplies(GroupCommit commits) {
        this.commits = commits;
    }

    /**
     * Marks the reply the connection is about to write (on its event loop, right after the backend
     * returned) as one to hold until `ticket` is durable.
     */
    static void holdNextReply(Channel channel, long ticket, GroupCommit commits) {
        if (channel.pipeline().get(NAME) == null) {
            channel.pipeline().addLast(NAME, new DurableReplies(commits));
        }
        channel.attr(TICKET).set(ticket);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        Long ticket = ctx.channel().attr(TICKET).getAndSet(null);
        if (ticket == null) {
            ctx.write(msg, promise);
            return;
        }
        commits.whenDurable(ticket, () -> {
            if (ctx.executor().inEventLoop()) {
                ctx.writeAndFlush(msg, promise);
            } else {
                ctx.executor().execute(() -> ctx.writeAndFlush(msg, promise));
            }
        });
    }
}
