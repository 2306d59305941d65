import assert from 'node:assert/strict';
import { FORMATS } from '../../src/lib/llm/formats/index.js';

describe('llm translation: stop reasons', () => {
  it('an Anthropic answer cut off by the context window reads as cut off in every format, streamed or not', () => {
    const res = FORMATS.anthropic.parseResponse({ id: 'msg_1', model: 'm', content: [{ type: 'text', text: 'partial' }], stop_reason: 'model_context_window_exceeded', usage: { input_tokens: 1, output_tokens: 2 } });
    assert.equal(res.stop, 'max_tokens');
    assert.equal((FORMATS.openai.serializeResponse(res, null).choices as { finish_reason: string }[])[0].finish_reason, 'length');
    assert.equal(FORMATS['openai-responses'].serializeResponse(res, null).status, 'incomplete');
    assert.equal(FORMATS.anthropic.serializeResponse(res, null).stop_reason, 'max_tokens');
    const dec = FORMATS.anthropic.decoder();
    dec.push({ data: JSON.stringify({ type: 'message_start', message: { id: 'msg_1', model: 'm', usage: { input_tokens: 1 } } }) });
    dec.push({ data: JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'model_context_window_exceeded' }, usage: { output_tokens: 2 } }) });
    const [finish] = dec.push({ data: JSON.stringify({ type: 'message_stop' }) });
    assert.deepEqual(finish, { type: 'finish', stop: 'max_tokens', usage: { inputTokens: 1, outputTokens: 2 } });
  });
});
