/**
 * The Vertex adapter's Anthropic publisher (src/providers/vertex.ts, over the Anthropic adapter's
 * mapping) under the shared provider conformance suite: rawPredict and streamRawPredict with
 * Vertex's API version in the body and no `model`. Sources of every fixture:
 * test/unit/fixtures/providers/vertex-claude/README.md.
 */
import { conformanceSuite, NOW } from './conformance.js';
import { choice, finish, parts, text, toolCall, usage } from './expectations.js';
import { VERTEX_TOKEN, vertexCredentials } from './vertex-support.js';

const HELLO = 'Hello! How can I help you today?';
const TOOLS = [
  ['toolu_01A09q90qw90lq917835lq9', 'Paris, France'],
  ['toolu_01PxG5W4nH8oZ2mY6vQ3rT7s', 'Tokyo, Japan'],
] as const;
const END_TURN = finish('stop', 'end_turn');

conformanceSuite({
  kind: 'vertex',
  fixtures: 'vertex-claude',
  provider: await vertexCredentials(),
  basePath: '',
  apiKey: VERTEX_TOKEN,
  credential: ['authorization', `Bearer ${VERTEX_TOKEN}`],
  upstreamModel: 'claude-sonnet-4-5@20250929',

  generate: [
    {
      name: 'generate-text',
      scenario: 'text',
      expect: { id: 'msg_01XFDUDYJgAACzvnptvVoYEL', created: NOW, choices: [choice(0, [text(HELLO)], END_TURN)], usage: usage(1209, 12, { cachedInput: 1188 }) },
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
  ],

  stream: [
    {
      name: 'stream-text',
      scenario: 'text',
      expect: [parts.start('msg_01Lp8Km5Jn2Hb9Gv6Fc3Dx0S', NOW), ...parts.texts(['Hello!', ' How can I help', ' you today?']), parts.finish(END_TURN), parts.usage(usage(1209, 12, { cachedInput: 1188 }))],
    },
  ],

  finishes: {
    response: 'generate-text',
    scenario: 'text',
    set: (body, raw) => (body.stop_reason = raw),
    cases: [
      ['end_turn', END_TURN],
      ['max_tokens', finish('length', 'max_tokens')],
      ['tool_use', finish('tool_calls', 'tool_use')],
      ['refusal', finish('content_filter', 'refusal')],
    ],
  },

  errors: [
    { name: 'error-400-invalid-request', situation: 'invalid_request', expect: { status: 400, upstreamFailure: 400, type: 'invalid_request_error', message: /max_tokens: 64001 > 64000/ } },
    // Vertex's own quota answer is Google's, not Anthropic's.
    { name: 'error-429-resource-exhausted', situation: 'rate_limited', expect: { status: 429, upstreamFailure: 429 } },
    { name: 'error-529-overloaded', situation: 'overloaded', expect: { status: 503, upstreamFailure: 529 } },
  ],

  relays: [
    ['anthropic.messages', {}, true],
    ['anthropic.count_tokens', {}, true],
    ['gemini.generateContent', {}, false],
    ['openai.chat', {}, false],
  ],
  relay: [
    {
      // Vertex's API version goes in the body, not the caller's (header or body); betas go as the header.
      name: 'relay-messages',
      operation: 'anthropic.messages',
      stream: false,
      headers: { 'anthropic-version': '2026-10-21', 'anthropic-beta': 'interleaved-thinking-2025-05-14' },
      body: { model: 'assistant', anthropic_version: '2026-10-21', max_tokens: 1024, messages: [{ role: 'user', content: 'Say hello.' }] },
    },
    {
      name: 'relay-messages-stream',
      operation: 'anthropic.messages',
      stream: true,
      body: { model: 'assistant', max_tokens: 1024, messages: [{ role: 'user', content: 'Say hello.' }], stream: true },
    },
    {
      // One path for every model; the body names it.
      name: 'relay-count-tokens',
      operation: 'anthropic.count_tokens',
      stream: false,
      body: { model: 'assistant', messages: [{ role: 'user', content: 'Say hello.' }] },
    },
  ],

  listModels: [],
});
