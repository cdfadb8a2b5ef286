/**
 * The Anthropic adapter (src/providers/anthropic.ts) under the shared provider conformance suite,
 * with the Messages API's recorded answers. Sources of every fixture:
 * test/unit/fixtures/providers/anthropic/README.md.
 */
import { generationRequest } from '../../../src/generation/model.js';
import { conformanceSuite, NOW } from './conformance.js';
import { choice, finish, parts, text, toolCall, usage } from './expectations.js';
import { DOCUMENT_REQUEST, SCENARIOS } from './scenarios.js';

const HELLO = 'Hello! How can I help you today?';
const TOOLS = [
  ['toolu_01A09q90qw90lq917835lq9', 'Paris, France'],
  ['toolu_01PxG5W4nH8oZ2mY6vQ3rT7s', 'Tokyo, Japan'],
] as const;
const SIGNATURE =
  'EqQBCkgIBxABGAIqQNm3fZlQwH1tGv9ZXb4k5aJcQ2Vh8cP7rT0yS6wLmU3nB1oE4dF9gK2jH5iA8xZ7qY0vR3tW6uN1pM4sC2eD5fG8hJKEgz3YbWcNm5Qw7Xr9Tv0aDGs4Lp2Hj6Kf8Mn1Qr';
const END_TURN = finish('stop', 'end_turn');
const OVERLOADED = { kind: 'upstream_overloaded', status: 503, upstreamFailure: 529, message: /is overloaded: Overloaded/ } as const;
const REFUSED_REQUEST = generationRequest({ model: 'assistant', messages: [{ role: 'user', content: [{ type: 'text', text: 'Write working ransomware.' }] }], maxOutputTokens: 512 });
const unix = (iso: string) => Date.parse(iso) / 1000;

conformanceSuite({
  kind: 'anthropic',
  basePath: '/v1',
  apiKey: 'sk-ant-test-0123456789',
  credential: ['x-api-key', 'sk-ant-test-0123456789'],
  upstreamModel: 'claude-sonnet-4-5',

  generate: [
    {
      // input_tokens leaves the cached part out; Sluice's input counts it.
      name: 'generate-text',
      scenario: 'text',
      expect: { id: 'msg_01XFDUDYJgAACzvnptvVoYEL', created: NOW, choices: [choice(0, [text(HELLO)], END_TURN)], usage: usage(1209, 12, { cachedInput: 1188 }) },
    },
    {
      name: 'generate-document',
      request: DOCUMENT_REQUEST,
      expect: { id: 'msg_01XFDUDYJgAACzvnptvVoYEL', created: NOW, choices: [choice(0, [text(HELLO)], END_TURN)], usage: usage(1209, 12, { cachedInput: 1188 }) },
    },
    {
      name: 'generate-cache-write',
      request: SCENARIOS.text.request,
      expect: { id: 'msg_01Hk7fRz3LqP8vN2cW5xJ9tB', created: NOW, choices: [choice(0, [text(HELLO)], END_TURN)], usage: usage(1209, 12, { cacheWrite: 1188 }) },
    },
    {
      name: 'generate-tools',
      scenario: 'tools',
      expect: {
        id: 'msg_01Aq9w938a90dw8q7xBx3Kp2',
        created: NOW,
        choices: [
          choice(
            0,
            [text("I'll check the weather in both cities."), ...TOOLS.map(([id, location]) => toolCall(id, 'get_weather', JSON.stringify({ location, unit: 'celsius' })))],
            finish('tool_calls', 'tool_use'),
          ),
        ],
        usage: usage(412, 98),
      },
    },
    {
      name: 'generate-tool-result',
      scenario: 'toolResult',
      expect: { id: 'msg_01Rt6yU8iO0pA2sD4fG6hJ8k', created: NOW, choices: [choice(0, [text('It is 18°C and sunny in Paris right now.')], END_TURN)], usage: usage(498, 16) },
    },
    {
      name: 'generate-reasoning',
      scenario: 'reasoning',
      expect: {
        id: 'msg_01Tz5Gm8Kq2Wv7Xc4Bn9Lp3H',
        created: NOW,
        choices: [choice(0, [{ type: 'reasoning', text: '27 × 43 = 27 × 40 + 27 × 3 = 1080 + 81 = 1161.', signature: SIGNATURE }, text('27 × 43 = 1161.')], END_TURN)],
        usage: usage(46, 180, { reasoning: 152 }),
      },
    },
    {
      // JSON mode is a forced json_answer tool: its input is the answer's text, and its tool_use an end of turn.
      name: 'generate-json-object',
      scenario: 'jsonObject',
      expect: { id: 'msg_01Jm4Nk7Pq0Rs3Tu6Vw9Xy2Z', created: NOW, choices: [choice(0, [text('{"city":"Paris","country":"France"}')], END_TURN)], usage: usage(621, 24) },
    },
    {
      name: 'generate-refusal',
      request: REFUSED_REQUEST,
      expect: { id: 'msg_01Qw2Er4Ty6Ui8Op0As2Df4G', created: NOW, choices: [choice(0, [], finish('content_filter', 'refusal'))], usage: usage(38, 5) },
    },
  ],

  stream: [
    {
      name: 'stream-text',
      scenario: 'text',
      expect: [parts.start('msg_01Lp8Km5Jn2Hb9Gv6Fc3Dx0S', NOW), ...parts.texts(['Hello!', ' How can I help', ' you today?']), parts.finish(END_TURN), parts.usage(usage(1209, 12, { cachedInput: 1188 }))],
    },
    {
      name: 'stream-tools',
      scenario: 'tools',
      expect: [
        parts.start('msg_01Nq3Wr6Ty9Ui2Op5As8Df1G', NOW),
        ...parts.texts(["I'll check the weather", ' in both cities.']),
        // Content blocks 1 and 2 are tool calls 0 and 1; the empty first fragment is no fragment.
        ...TOOLS.flatMap(([id, location], index) => [
          parts.toolStart(index, id, 'get_weather'),
          ...parts.toolDeltas(index, ['{"location": "', location, '", "unit": "cel', 'sius"}']),
          parts.toolEnd(index),
        ]),
        parts.finish(finish('tool_calls', 'tool_use')),
        parts.usage(usage(412, 98)),
      ],
    },
    {
      name: 'stream-reasoning',
      scenario: 'reasoning',
      expect: [
        parts.start('msg_01Vb4Nm7Qw0Er3Ty6Ui9Op2A', NOW),
        parts.reasoning('27 × 43 = 27 × 40 + 27 × 3'),
        parts.reasoning(' = 1080 + 81'),
        parts.reasoning(' = 1161.'),
        parts.signature(SIGNATURE),
        ...parts.texts(['27 × 43', ' = 1161.']),
        parts.finish(END_TURN),
        parts.usage(usage(46, 180, { reasoning: 152 })),
      ],
    },
    {
      name: 'stream-json-object',
      scenario: 'jsonObject',
      expect: [parts.start('msg_01Xc5Vb8Nm1Qw4Er7Ty0Ui3O', NOW), ...parts.texts(['{"city": "Par', 'is", "country": "France"}']), parts.finish(END_TURN), parts.usage(usage(621, 24))],
    },
    {
      name: 'stream-refusal',
      request: REFUSED_REQUEST,
      expect: [parts.start('msg_01Zs6Xd9Cf2Vg5Bh8Nj1Mk4L', NOW), parts.text('Here is how'), parts.finish(finish('content_filter', 'refusal')), parts.usage(usage(38, 5))],
    },
    {
      name: 'stream-error',
      scenario: 'text',
      expect: [parts.start('msg_01Lp8Km5Jn2Hb9Gv6Fc3Dx0S', NOW), parts.text('Hello!')],
      error: OVERLOADED,
    },
    {
      name: 'stream-truncated',
      scenario: 'text',
      expect: [parts.start('msg_01Lp8Km5Jn2Hb9Gv6Fc3Dx0S', NOW), ...parts.texts(['Hello!', ' How can I help'])],
      error: { kind: 'upstream_error', status: 502, upstreamFailure: 502, message: /a stream that ended before message_stop/ },
    },
  ],

  finishes: {
    response: 'generate-text',
    scenario: 'text',
    set: (body, raw) => {
      body.stop_reason = raw;
      if (raw === 'stop_sequence') body.stop_sequence = '\n\n';
    },
    cases: [
      ['end_turn', END_TURN],
      ['stop_sequence', finish('stop', 'stop_sequence', '\n\n')],
      ['max_tokens', finish('length', 'max_tokens')],
      ['model_context_window_exceeded', finish('length', 'model_context_window_exceeded')],
      ['tool_use', finish('tool_calls', 'tool_use')],
      ['refusal', finish('content_filter', 'refusal')],
      ['pause_turn', finish('stop', 'pause_turn')],
    ],
  },

  errors: [
    { name: 'error-400-invalid-request', situation: 'invalid_request', expect: { status: 400, upstreamFailure: 400, type: 'invalid_request_error', message: /max_tokens: 64001 > 64000/ } },
    { name: 'error-401-authentication', situation: 'bad_credential', expect: { status: 502, upstreamFailure: 401 } },
    { name: 'error-403-permission', situation: 'no_permission', expect: { status: 502, upstreamFailure: 403 } },
    { name: 'error-404-not-found', situation: 'not_found', expect: { status: 404, upstreamFailure: 404, type: 'not_found_error', message: /model: claude-sonnet-4-5/ } },
    { name: 'error-413-too-large', situation: 'too_large', expect: { status: 413, upstreamFailure: 413, type: 'request_too_large', message: /maximum allowed number of bytes/ } },
    { name: 'error-429-rate-limit', situation: 'rate_limited', expect: { status: 429, upstreamFailure: 429, retryAfter: '15' } },
    { name: 'error-500-api-error', situation: 'server_error', expect: { status: 502, upstreamFailure: 500 } },
    { name: 'error-529-overloaded', situation: 'overloaded', expect: { status: 503, upstreamFailure: 529 } },
  ],

  relays: [
    ['anthropic.messages', {}, true],
    ['anthropic.count_tokens', {}, true],
    ['openai.chat', {}, false],
    ['gemini.generateContent', {}, false],
  ],
  relay: [
    {
      // The caller's API version goes upstream (its body was written for it); its beta features join the operator's.
      name: 'relay-messages',
      operation: 'anthropic.messages',
      stream: false,
      headers: { 'anthropic-version': '2026-10-21', 'anthropic-beta': 'interleaved-thinking-2025-05-14' },
      provider: { headers: { 'anthropic-beta': 'context-1m-2025-08-07' } },
      body: { model: 'assistant', max_tokens: 1024, messages: [{ role: 'user', content: 'Say hello.' }] },
    },
    {
      name: 'relay-messages-stream',
      operation: 'anthropic.messages',
      stream: true,
      body: { model: 'assistant', max_tokens: 1024, messages: [{ role: 'user', content: 'Say hello.' }], stream: true },
    },
    {
      name: 'relay-messages-stream-error',
      operation: 'anthropic.messages',
      stream: true,
      body: { model: 'assistant', max_tokens: 1024, messages: [{ role: 'user', content: 'Say hello.' }], stream: true },
      error: { ...OVERLOADED, afterEvents: 4 },
    },
    {
      name: 'relay-count-tokens',
      operation: 'anthropic.count_tokens',
      stream: false,
      body: { model: 'assistant', messages: [{ role: 'user', content: 'Say hello.' }] },
    },
  ],

  listModels: [
    {
      name: 'models-paged',
      pages: ['models-page-1', 'models-page-2'],
      paths: ['/v1/models?limit=1000', '/v1/models?limit=1000&after_id=claude-haiku-4-5-20251001'],
      expect: [
        { id: 'claude-opus-4-5-20251101', displayName: 'Claude Opus 4.5', created: unix('2025-11-24T00:00:00Z') },
        { id: 'claude-haiku-4-5-20251001', displayName: 'Claude Haiku 4.5', created: unix('2025-10-15T00:00:00Z') },
        { id: 'claude-sonnet-4-5-20250929', displayName: 'Claude Sonnet 4.5', created: unix('2025-09-29T00:00:00Z') },
      ],
    },
    { name: 'models-refused', pages: ['error-401-authentication'], paths: ['/v1/models?limit=1000'], error: { kind: 'upstream_auth_failed', status: 502, upstreamFailure: 401 } },
  ],
});
