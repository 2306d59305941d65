import assert from 'node:assert/strict';
import { CancelRegistry } from '../../src/lib/pubsub/cancels.js';

describe('cancel registry', () => {
  it('aborts every tracked piece of work of a cancelled message, and only that message', async () => {
    const r = new CancelRegistry();
    let deliver!: (m: string) => void;
    await r.listen(async (_channel, listener) => ((deliver = listener), () => undefined), 'c');
    const a1 = r.track('msg_a');
    const a2 = r.track('msg_a');
    const b = r.track('msg_b');
    deliver(JSON.stringify({ session_id: 's', message_id: 'msg_a' }));
    assert.deepEqual([a1.signal.aborted, a2.signal.aborted, b.signal.aborted], [true, true, false]);
    deliver('not json');
    assert.equal(b.signal.aborted, false);
    a1.release();
    a2.release();
    b.release();
    assert.equal(r.size, 0, 'released work is forgotten');
    assert.equal(r.cancel('msg_b'), 0, 'a cancel after the work ended aborts nothing');
  });
});
