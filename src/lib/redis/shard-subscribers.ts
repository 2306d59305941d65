import type { Cluster, Redis } from 'ioredis';

/** One of a Cluster's shard subscriber connections: which master it reads, and its connection. */
export interface ShardSubscriber {
  node: string;
  connection: Redis;
}

interface SubscriberGroup {
  shardedSubscribers: Map<string, { getInstance(): Redis | null }>;
}

/**
 * The connections a Cluster made with `shardedSubscribers` reads SSUBSCRIBEd
 * channels on, one per master. ioredis keeps them to itself (a private
 * ClusterSubscriberGroup): it replaces one whose connection ends, and
 * resubscribes, but a silent one (a partition, or a node that dropped the
 * client while its close was lost) is never found out, since a subscriber
 * only reads and nothing times it out. The hub PINGs them through this
 * handle (src/lib/pubsub/hub.ts). A changed ioredis fails here loudly, and the
 * Redis Cluster leg's hub test with it, rather than leaving them unwatched.
 */
export function shardSubscribers(cluster: Cluster): ShardSubscriber[] {
  const group = (cluster as unknown as { shardedSubscribers?: SubscriberGroup }).shardedSubscribers;
  if (!(group?.shardedSubscribers instanceof Map)) {
    throw new Error('ioredis no longer keeps a Cluster\'s shard subscribers where src/lib/redis/shard-subscribers.ts reads them');
  }
  const out: ShardSubscriber[] = [];
  for (const [node, s] of group.shardedSubscribers) {
    const connection = s.getInstance();
    if (connection) out.push({ node, connection });
  }
  return out;
}
