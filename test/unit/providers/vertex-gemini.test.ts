/**
 * The Vertex adapter's Google publisher (src/providers/vertex.ts, over the Gemini adapter's mapping)
 * under the shared provider conformance suite, with Vertex AI's answers. Sources of every fixture:
 * test/unit/fixtures/providers/vertex-gemini/README.md.
 */
import { conformanceSuite, GENERATED_ID, NOW } from './conformance.js';
import { choice, finish, parts, text, toolCall, usage } from './expectations.js';
import { VERTEX_TOKEN, vertexCredentials } from './vertex-support.js';

const HELLO = 'Hello! How can I help you today?';
const SIGNATURE =
  'CiQB0e2Kb6fN1mX3pQ7rT9vW2yZ4aC6dE8gH0jK2lM4nP6qS8uXyCmUB0e2Kb3hJ5kL7mN9pR1sT3vW5xZ7bD9fH1jL3nP5rT7vX9zB1dF3hJ5lN7pR9tV1xZ3bD5fH7jL9nP1rT3vX5zB7dF9hJ1lN3pR5tV7xZ9b';
const ARGS = ['{"location":"Paris, France","unit":"celsius"}', '{"location":"Tokyo, Japan","unit":"celsius"}'] as const;
const STOP = finish('stop', 'STOP');

conformanceSuite({
  kind: 'vertex',
  fixtures: 'vertex-gemini',
  provider: await vertexCredentials(),
  basePath: '',
  apiKey: VERTEX_TOKEN,
  credential: ['authorization', `Bearer ${VERTEX_TOKEN}`],
  upstreamModel: 'gemini-2.5-flash',

  generate: [
    {
      name: 'generate-text',
      scenario: 'text',
      expect: { id: 'xK8lacfHOqDWvdIPsZmB8Q0', created: NOW, choices: [choice(0, [text(HELLO)], STOP)], usage: usage(1209, 9, { cachedInput: 1024 }) },
    },
    {
      name: 'generate-tools',
      scenario: 'tools',
      expect: {
        id: 'yL9mbdgIPrEXweJQtanC9R1',
        created: NOW,
        choices: [choice(0, [{ type: 'reasoning', text: '', signature: SIGNATURE }, ...ARGS.map((args) => toolCall(GENERATED_ID, 'get_weather', args))], finish('tool_calls', 'STOP'))],
        usage: usage(96, 94, { reasoning: 64 }),
      },
    },
  ],

  stream: [
    {
      name: 'stream-text',
      scenario: 'text',
      expect: [parts.start('gT7uljoQXzMFemRYbivkHZ9', NOW), ...parts.texts(['Hello! How', ' can I help you', ' today?']), parts.finish(STOP), parts.usage(usage(1209, 9, { cachedInput: 1024 }))],
    },
  ],

  finishes: {
    response: 'generate-text',
    scenario: 'text',
    set: (body, raw) => (body.candidates[0].finishReason = raw),
    cases: [
      ['STOP', STOP],
      ['MAX_TOKENS', finish('length', 'MAX_TOKENS')],
      ['SAFETY', finish('content_filter', 'SAFETY')],
      ['MODEL_ARMOR', finish('error', 'MODEL_ARMOR'), { why: "Vertex's own reason (Model Armor stopped the answer) is no clean stop; the Gemini mapping does not know it" }],
    ],
  },

  errors: [
    { name: 'error-400-invalid-argument', situation: 'invalid_request', expect: { status: 400, upstreamFailure: 400, message: /maxOutputTokens value of 0/ } },
    { name: 'error-401-unauthenticated', situation: 'bad_credential', expect: { status: 502, upstreamFailure: 401 } },
    { name: 'error-403-permission-denied', situation: 'no_permission', expect: { status: 502, upstreamFailure: 403 } },
    // Vertex's 429 has no RetryInfo: the deployment cools for routing's default.
    { name: 'error-429-resource-exhausted', situation: 'rate_limited', expect: { status: 429, upstreamFailure: 429 } },
    { name: 'error-503-unavailable', situation: 'overloaded', expect: { status: 503, upstreamFailure: 503 } },
  ],

  relays: [
    ['gemini.generateContent', {}, true],
    ['gemini.countTokens', {}, true],
    ['anthropic.messages', {}, false],
    ['openai.chat', {}, false],
    // The publisher is chosen by the model: a claude- model takes Anthropic's wire instead.
    ['anthropic.messages', { upstream_model: 'claude-sonnet-4-5@20250929' }, true],
    ['gemini.generateContent', { upstream_model: 'claude-sonnet-4-5@20250929' }, false],
    // A publisher model's resource name says its publisher: Anthropic's wire, as pricing reads it too (config/cloud-model-ids.ts).
    ['anthropic.messages', { upstream_model: 'publishers/anthropic/models/claude-sonnet-4-5@20250929' }, true],
    ['gemini.generateContent', { upstream_model: 'publishers/anthropic/models/claude-sonnet-4-5@20250929' }, false],
    ['gemini.generateContent', { upstream_model: 'publishers/google/models/gemini-2.5-pro' }, true],
  ],
  relay: [
    {
      name: 'relay-generate-content',
      operation: 'gemini.generateContent',
      stream: false,
      model: { max_output_tokens: 1024 },
      body: {
        contents: [{ role: 'user', parts: [{ text: 'Say hello.' }] }],
        generationConfig: { maxOutputTokens: 8192, temperature: 0.5 },
        safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_ONLY_HIGH' }],
      },
    },
    {
      // Vertex's countTokens takes the request's fields at the top, the model by its resource name.
      name: 'relay-count-tokens',
      operation: 'gemini.countTokens',
      stream: false,
      body: { generateContentRequest: { model: 'models/assistant', contents: [{ role: 'user', parts: [{ text: 'Say hello.' }] }], systemInstruction: { parts: [{ text: 'Be brief.' }] } } },
    },
  ],

  listModels: [
    {
      name: 'publisher-models',
      pages: ['publishers-google-page-1', 'publishers-google-page-2', 'publishers-anthropic-page-1'],
      paths: ['/v1beta1/publishers/google/models?pageSize=1000', '/v1beta1/publishers/google/models?pageSize=1000&pageToken=CgZpbWFnZW4', '/v1beta1/publishers/anthropic/models?pageSize=1000'],
      expect: [
        { id: 'gemini-2.5-flash', ownedBy: 'google' },
        { id: 'text-embedding-005', ownedBy: 'google', endpoints: ['embeddings'] },
        { id: 'claude-sonnet-4-5@20250929', ownedBy: 'anthropic' },
        { id: 'claude-opus-4-1@20250805', ownedBy: 'anthropic' },
      ],
    },
    {
      name: 'publisher-models-refused',
      pages: ['error-403-permission-denied'],
      paths: ['/v1beta1/publishers/google/models?pageSize=1000'],
      error: { kind: 'upstream_auth_failed', status: 502, upstreamFailure: 403 },
    },
  ],
});
