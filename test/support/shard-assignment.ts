/** A worker's `shard assignment` log line: its member id, how many members it saw, the shards it took. */
export interface Assignment {
  member: string;
  members: number;
  shards: number[];
}

/** The last shard assignment a worker process logged (its pino lines), or null before the first. */
export function lastAssignment(p: { lines: string[] }): Assignment | null {
  for (let i = p.lines.length - 1; i >= 0; i--) {
    if (!p.lines[i].includes('"msg":"shard assignment"')) continue;
    const { member, members, shards } = JSON.parse(p.lines[i]) as Assignment;
    return { member, members, shards };
  }
  return null;
}
