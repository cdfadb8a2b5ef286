import type { ServerResponse } from 'node:http';
import { endStream, json, startFakeServer, writeEvent, type FakeUpstream } from './fake-server.js';
import { countWords, generate } from './generation.js';

/**
 * A stand-in for Anthropic's Messages API as documented: `x-api-key` and `anthropic-version`
 * required, `max_tokens` required, temperature and top_p in 0..1, unknown fields refused, errors as
 * `{"type":"error","error":{type,message},"request_id"}`, and the named-event stream (message_start,
 * content_block_*, message_delta, message_stop, ping). A prompt containing "refuse" is refused.
 */
export async function startFakeAnthropic(options: { apiKey: string; models?: string[] }): Promise<FakeUpstream> {
  const models = new Set(options.models ?? ['claude-test']);
  const allowed = new Set(['model', 'messages', 'max_tokens', 'stop_sequences', 'temperature', 'top_p', 'top_k', 'metadata', 'stream', 'system']);
  let served = 0;
  return startFakeServer('/v1', async (request, res, behaviour) => {
    const { body, headers } = request;
    if (headers['x-api-key'] !== options.apiKey) return error(res, 401, 'authentication_error', 'invalid x-api-key');
    if (typeof headers['anthropic-version'] !== 'string') return error(res, 400, 'invalid_request_error', 'anthropic-version: header is required');
    if (request.method !== 'POST' || request.path !== '/v1/messages') return error(res, 404, 'not_found_error', 'Not found');
    if (body === undefined || typeof body !== 'object') return error(res, 400, 'invalid_request_error', 'Invalid JSON');
    for (const field of Object.keys(body)) if (!allowed.has(field)) return error(res, 400, 'invalid_request_error', `${field}: Extra inputs are not permitted`);
    if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return error(res, 400, 'invalid_request_error', 'max_tokens: Field required');
    if (!Array.isArray(body.messages) || body.messages.length === 0) return error(res, 400, 'invalid_request_error', 'messages: at least one message is required');
    if (body.temperature !== undefined && (body.temperature < 0 || body.temperature > 1)) {
      return error(res, 400, 'invalid_request_error', 'temperature: range: 0 <= temperature <= 1');
    }
    if (body.top_p !== undefined && (body.top_p < 0 || body.top_p > 1)) return error(res, 400, 'invalid_request_error', 'top_p: range: 0 <= top_p <= 1');
    if (body.stop_sequences !== undefined && (!Array.isArray(body.stop_sequences) || body.stop_sequences.some((s: unknown) => typeof s !== 'string' || !/\S/.test(s)))) {
      return error(res, 400, 'invalid_request_error', 'stop_sequences: each stop sequence must contain non-whitespace');
    }
    if (!models.has(body.model)) return error(res, 404, 'not_found_error', `model: ${body.model}`);

    served++;
    const id = `msg_${String(served).padStart(4, '0')}`;
    const prompt = String(body.messages.at(-1).content);
    const refused = prompt.includes('refuse');
    const generation = refused ? { tokens: ['I cannot'], finishReason: 'stop' as const, stop: null } : generate(prompt, body.max_tokens, body.stop_sequences ?? [], { lead: true });
    const stopReason = refused ? 'refusal' : generation.stop !== null ? 'stop_sequence' : generation.finishReason === 'length' ? 'max_tokens' : 'end_turn';
    const usage = { input_tokens: countWords(prompt), output_tokens: generation.tokens.length };
    const message = {
      id,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: [{ type: 'text', text: generation.tokens.join('') }],
      stop_reason: stopReason,
      stop_sequence: generation.stop,
      usage,
    };
    if (body.stream !== true) return json(res, 200, message);

    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    const events: [string, unknown][] = [
      ['message_start', { type: 'message_start', message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: usage.input_tokens, output_tokens: 1 } } }],
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
      ['ping', { type: 'ping' }],
      ...generation.tokens.map((text): [string, unknown] => ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }]),
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      ['message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: generation.stop }, usage: { output_tokens: usage.output_tokens } }],
      ['message_stop', { type: 'message_stop' }],
    ];
    for (const [i, [name, data]] of events.entries()) {
      if (behaviour.errorAfterChunks !== undefined && i === behaviour.errorAfterChunks) {
        res.end(`event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })}\n\n`);
        return;
      }
      if (!(await writeEvent(res, `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`, behaviour))) return;
    }
    await endStream(res, '');
  });
}

function error(res: ServerResponse, status: number, type: string, message: string): void {
  json(res, status, { type: 'error', error: { type, message }, request_id: 'req_fake' });
}

