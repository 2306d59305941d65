import assert from 'node:assert/strict';
import { undeclaredStatuses, type ApiDocument } from '../support/api-statuses.js';

describe('the integration run’s check of answered statuses against the document', () => {
  const doc: ApiDocument = {
    paths: {
      '/v1/sessions/{session_id}/messages/{message_id}': { get: { responses: { '200': {}, '404': {} } } },
      '/v1/sessions/{session_id}/messages/sync': { post: { responses: { '200': {}, '202': {} } } },
    },
  };

  it('names an operation that answered a status it does not declare, and only that', () => {
    const observed = new Map([
      ['GET /v1/sessions/ses_1/messages/msg_1 404', 2],
      ['GET /v1/sessions/ses_1/messages/msg_1 409', 1],
      ['POST /v1/sessions/ses_1/messages/sync 202', 1],
      ['POST /v1/sessions/ses_1/messages/sync 409', 3],
      // Not an operation of the document (an unknown route, the console): not the document's to declare.
      ['GET /console/app.js 200', 1],
      // An unexpected error is the `default` response; 503 is declared like any other status.
      ['GET /v1/sessions/ses_1/messages/msg_1 500', 1],
      ['GET /v1/sessions/ses_1/messages/msg_1 503', 1],
    ]);
    assert.deepEqual(undeclaredStatuses(doc, observed), [
      'GET /v1/sessions/{session_id}/messages/{message_id} 409 (1×)',
      'GET /v1/sessions/{session_id}/messages/{message_id} 503 (1×)',
      'POST /v1/sessions/{session_id}/messages/sync 409 (3×)',
    ]);
  });
});
