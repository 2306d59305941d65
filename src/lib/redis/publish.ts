import { isCluster, type RedisClient } from './connection.js';

/**
 * Publishing on a channel PubSubHub subscribes to. On a Redis Cluster every
 * channel is a shard channel (SPUBLISH): it lives on its name's slot, so the
 * message travels to that shard's subscribers only, where a classic PUBLISH
 * is broadcast over the cluster bus to every node. On one server, classic
 * PUBLISH (works on any Redis version and on Redis-compatible servers).
 */
export function publish(conn: RedisClient, channel: string, message: string): Promise<unknown> {
  return isCluster(conn) ? conn.spublish(channel, message) : conn.publish(channel, message);
}

/** Several messages on one channel in one round trip, in order (one channel is one slot, so one node). */
export async function publishAll(conn: RedisClient, channel: string, messages: string[]): Promise<void> {
  if (messages.length === 0) return;
  if (messages.length === 1) {
    await publish(conn, channel, messages[0]);
    return;
  }
  const pipe = conn.pipeline();
  for (const m of messages) {
    if (isCluster(conn)) pipe.spublish(channel, m);
    else pipe.publish(channel, m);
  }
  const results = await pipe.exec();
  const failed = results?.find(([err]) => err);
  if (failed) throw failed[0];
}
