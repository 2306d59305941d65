import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { newId } from '../../src/domain/ids.js';
import { METADATA_WALK } from '../../src/store/sessions.js';
import type { SessionDoc } from '../../src/domain/views/session.js';
import { startHarness, type Harness } from '../support/harness.js';
import { json } from '../support/wait.js';

type Page = { sessions: { id: string; metadata: Record<string, string> }[]; has_more: boolean; next_cursor: string | null };

/**
 * A metadata-filtered session list looks at METADATA_WALK sessions per page at
 * most (SessionStore.list): a rare value behind many others costs several short
 * pages instead of one walk over the whole org, and following next_cursor still
 * finds every match, newest first, once.
 */
describe('session list filtered by metadata: a bounded walk', function () {
  this.timeout(120_000);
  let h: Harness;
  let mongo: MongoClient;
  const total = METADATA_WALK + 150;
  // Oldest first (ids are time-ordered): the rare ones at the old end, one in the middle, the newest.
  const rareAt = new Set([0, 1, 2, 3, 4, 600, total - 1]);
  const ids: string[] = [];

  before(async () => {
    h = await startHarness({ roles: ['web'] });
    const orgId = (await json<{ id: string }>(await h.api('/v1/organization'), 200)).id;
    mongo = await new MongoClient(h.env.MONGODB_URL).connect();
    const docs: SessionDoc[] = Array.from({ length: total }, (_, i) => {
      const id = newId('session');
      ids.push(id);
      return {
        _id: id, org_id: orgId, agent_id: 'agt_seed', version_id: 'ver_seed', name: null, storage_binding_id: null, llm_id: 'main', internet_access: false,
        metadata: { kind: rareAt.has(i) ? 'rare' : 'common', n: String(i) }, secrets: null, llm_api_key: null, batch_id: null, priority: 'interactive',
        created_at: new Date(), status: 'idle', last_sequence: 0, last_message_id: null, last_message_status: null, running_message_id: null, queued_message_ids: [], recent_commands: [],
      };
    });
    const col = mongo.db(h.env.TROUPE_MONGODB_DB).collection<SessionDoc>('sessions');
    for (let i = 0; i < docs.length; i += 500) await col.insertMany(docs.slice(i, i + 500), { ordered: false });
  });
  after(async () => {
    await mongo?.close();
    await h?.close();
  });

  async function walk(query: string): Promise<Page[]> {
    const pages: Page[] = [];
    for (let after: string | null = null, i = 0; i < 50; i++) {
      const page: Page = await json<Page>(await h.api(`/v1/sessions?${query}${after ? `&after=${after}` : ''}`), 200);
      pages.push(page);
      if (!page.has_more) return pages;
      after = page.next_cursor;
    }
    throw new Error('more than 50 pages');
  }

  it('finds every rare session by following next_cursor, through pages the walk left short', async () => {
    const pages = await walk('metadata.kind=rare&limit=3');
    const found = pages.flatMap((p) => p.sessions.map((s) => s.id));
    const expected = ids.filter((_, i) => rareAt.has(i)).reverse();
    assert.deepEqual(found, expected);
    // The newest 1,000 hold two rare sessions: the first page is short, and says where the walk stopped.
    assert.deepEqual(pages[0].sessions.map((s) => s.id), expected.slice(0, 2));
    assert.equal(pages[0].has_more, true);
    assert.equal(pages[0].next_cursor, ids[total - METADATA_WALK]);
    assert.ok(pages.every((p) => p.sessions.length <= 3));
  });

  it('a value no session has ends in a few empty pages, not a walk of the org', async () => {
    const pages = await walk('metadata.kind=none');
    assert.equal(pages.length, Math.ceil(total / METADATA_WALK));
    assert.ok(pages.every((p) => p.sessions.length === 0));
  });

  it('common values and unfiltered lists fill their pages as before', async () => {
    const common = await json<Page>(await h.api('/v1/sessions?metadata.kind=common&limit=100'), 200);
    assert.equal(common.sessions.length, 100);
    assert.equal(common.next_cursor, common.sessions[99].id);
    const several = await json<Page>(await h.api(`/v1/sessions?metadata.kind=common&metadata.n=${total - 2}`), 200);
    assert.deepEqual(several.sessions.map((s) => s.id), [ids[total - 2]]);
    assert.equal(several.has_more, true, 'the walk stopped at its bound before the org ended');
    const all = await walk('limit=100');
    assert.equal(all.flatMap((p) => p.sessions).length, total);
  });
});
