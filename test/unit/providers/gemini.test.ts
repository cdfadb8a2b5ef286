/**
 * The Gemini adapter (src/providers/gemini.ts) under the shared provider conformance suite, with
 * the Gemini API's recorded answers. Sources of every fixture:
 * test/unit/fixtures/providers/gemini/README.md.
 */
import { generationRequest } from '../../../src/generation/model.js';
import { conformanceSuite, GENERATED_ID, NOW } from './conformance.js';
import { choice, finish, parts, text, toolCall, usage } from './expectations.js';
import { DOCUMENT_REQUEST, SCENARIOS } from './scenarios.js';

const HELLO = 'Hello! How can I help you today?';
const SIGNATURE =
  'CiQB0e2Kb6fN1mX3pQ7rT9vW2yZ4aC6dE8gH0jK2lM4nP6qS8uXyCmUB0e2Kb3hJ5kL7mN9pR1sT3vW5xZ7bD9fH1jL3nP5rT7vX9zB1dF3hJ5lN7pR9tV1xZ3bD5fH7jL9nP1rT3vX5zB7dF9hJ1lN3pR5tV7xZ9b';
const THOUGHT = '**Multiplying two numbers**\n\n27 × 43 = 27 × 40 + 27 × 3 = 1080 + 81 = 1161.\n';
const ARGS = ['{"location":"Paris, France","unit":"celsius"}', '{"location":"Tokyo, Japan","unit":"celsius"}'] as const;
const STOP = finish('stop', 'STOP');
/** Sluice's word for a prompt Gemini blocked before any candidate (promptFeedback.blockReason). */
const PROMPT_BLOCKED = finish('content_filter', 'PROMPT_BLOCKED');
const OVERLOADED = { kind: 'upstream_overloaded', status: 503, upstreamFailure: 503, message: /is overloaded: The model is overloaded/ } as const;
const UNSAFE_REQUEST = generationRequest({ model: 'assistant', messages: [{ role: 'user', content: [{ type: 'text', text: 'Explain how to make a nerve agent.' }] }], maxOutputTokens: 512 });
const GEMINI_FLASH = { displayName: 'Gemini 2.5 Flash', contextWindow: 1048576, maxOutputTokens: 65536 };

conformanceSuite({
  kind: 'gemini',
  basePath: '/v1beta',
  apiKey: 'AIzaSyTest0123456789abcdefghij',
  credential: ['x-goog-api-key', 'AIzaSyTest0123456789abcdefghij'],
  upstreamModel: 'gemini-2.5-flash',

  generate: [
    {
      name: 'generate-text',
      scenario: 'text',
      expect: { id: 'xK8lacfHOqDWvdIPsZmB8Q0', created: NOW, choices: [choice(0, [text(HELLO)], STOP)], usage: usage(1209, 9, { cachedInput: 1024 }) },
    },
    {
      name: 'generate-document',
      request: DOCUMENT_REQUEST,
      expect: { id: 'xK8lacfHOqDWvdIPsZmB8Q0', created: NOW, choices: [choice(0, [text(HELLO)], STOP)], usage: usage(1209, 9, { cachedInput: 1024 }) },
    },
    {
      // Gemini names no call ids and says STOP after calls; thoughts count as output.
      name: 'generate-tools',
      scenario: 'tools',
      expect: {
        id: 'yL9mbdgIPrEXweJQtanC9R1',
        created: NOW,
        choices: [choice(0, [{ type: 'reasoning', text: '', signature: SIGNATURE }, ...ARGS.map((args) => toolCall(GENERATED_ID, 'get_weather', args))], finish('tool_calls', 'STOP'))],
        usage: usage(96, 94, { reasoning: 64 }),
      },
    },
    {
      name: 'generate-tool-result',
      scenario: 'toolResult',
      expect: { id: 'zM0ncehJQsFYxfKRubodAS2', created: NOW, choices: [choice(0, [text('It is 18°C and sunny in Paris right now.')], STOP)], usage: usage(131, 14) },
    },
    {
      name: 'generate-reasoning',
      scenario: 'reasoning',
      expect: {
        id: 'aN1odfiKRtGZygLSvcpeBT3',
        created: NOW,
        choices: [choice(0, [{ type: 'reasoning', text: THOUGHT }, { type: 'reasoning', text: '', signature: SIGNATURE }, text('27 × 43 = 1161.')], STOP)],
        usage: usage(12, 197, { reasoning: 186 }),
      },
    },
    {
      name: 'generate-json-object',
      scenario: 'jsonObject',
      expect: { id: 'bO2pegjLSuHAzhMTwdqfCU4', created: NOW, choices: [choice(0, [text('{\n  "city": "Paris",\n  "country": "France"\n}')], STOP)], usage: usage(21, 17) },
    },
    {
      name: 'generate-two-choices',
      scenario: 'text',
      choices: 2,
      expect: {
        id: 'cP3qfhkMTvIBaiNUxergDV5',
        created: NOW,
        choices: [choice(0, [text(HELLO)], STOP), choice(1, [text('Hi there! What can I do for you?')], STOP)],
        usage: usage(1209, 19, { cachedInput: 1024 }),
      },
    },
    {
      name: 'generate-logprobs',
      request: { ...SCENARIOS.text.request, logprobs: { top: 2 } },
      expect: {
        id: 'dQ4rgilNUwJCbjOVyfshEW6',
        created: NOW,
        choices: [
          choice(0, [text('Hello!')], STOP, [
            { token: 'Hello', logprob: -0.0012, top: [{ token: 'Hello', logprob: -0.0012 }, { token: 'Hi', logprob: -6.875 }] },
            { token: '!', logprob: -0.0003, top: [{ token: '!', logprob: -0.0003 }, { token: ',', logprob: -8.25 }] },
          ]),
        ],
        usage: usage(1209, 2, { cachedInput: 1024 }),
      },
    },
    {
      name: 'generate-safety',
      request: UNSAFE_REQUEST,
      expect: { id: 'eR5sjhmOVxKDckPWzgtiFX7', created: NOW, choices: [choice(0, [], finish('content_filter', 'SAFETY'))], usage: usage(14, 0) },
    },
    {
      name: 'generate-prompt-blocked',
      request: UNSAFE_REQUEST,
      expect: { id: 'fS6tkinPWyLEdlQXahujGY8', created: NOW, choices: [choice(0, [], PROMPT_BLOCKED)], usage: usage(14, 0) },
    },
  ],

  stream: [
    {
      name: 'stream-text',
      scenario: 'text',
      expect: [parts.start('gT7uljoQXzMFemRYbivkHZ9', NOW), ...parts.texts(['Hello! How', ' can I help you', ' today?']), parts.finish(STOP), parts.usage(usage(1209, 9, { cachedInput: 1024 }))],
    },
    {
      // Each call comes whole in one event: its start, all its arguments and its end at once.
      name: 'stream-tools',
      scenario: 'tools',
      expect: [
        parts.start('hU8vmkpRYaNGfnSZcjwlIA0', NOW),
        parts.signature(SIGNATURE),
        ...ARGS.flatMap((args, index) => [parts.toolStart(index, GENERATED_ID, 'get_weather'), ...parts.toolDeltas(index, [args]), parts.toolEnd(index)]),
        parts.finish(finish('tool_calls', 'STOP')),
        parts.usage(usage(96, 94, { reasoning: 64 })),
      ],
    },
    {
      name: 'stream-reasoning',
      scenario: 'reasoning',
      expect: [
        parts.start('iV9wnlqSZbOHgoTAdkxmJB1', NOW),
        parts.reasoning(THOUGHT),
        parts.text('27 × 43'),
        parts.signature(SIGNATURE),
        parts.text(' = 1161.'),
        parts.finish(STOP),
        parts.usage(usage(12, 197, { reasoning: 186 })),
      ],
    },
    {
      name: 'stream-prompt-blocked',
      request: UNSAFE_REQUEST,
      expect: [parts.start('jW0xomrTAcPIhpUBelynKC2', NOW), parts.finish(PROMPT_BLOCKED), parts.usage(usage(14, 0))],
    },
    {
      name: 'stream-safety',
      request: UNSAFE_REQUEST,
      expect: [parts.start('kX1ypnsUBdQJiqVCfmzoLD3', NOW), parts.text('Here is how'), parts.finish(finish('content_filter', 'SAFETY')), parts.usage(usage(14, 3))],
    },
    {
      // The error event's `code` is its status (the @google/genai SDK raises it as such), as the relay reads it.
      name: 'stream-error',
      scenario: 'text',
      expect: [parts.start('gT7uljoQXzMFemRYbivkHZ9', NOW), parts.text('Hello! How')],
      error: OVERLOADED,
    },
    {
      name: 'stream-truncated',
      scenario: 'text',
      expect: [parts.start('gT7uljoQXzMFemRYbivkHZ9', NOW), ...parts.texts(['Hello! How', ' can I help you'])],
      error: { kind: 'upstream_error', status: 502, upstreamFailure: 502, message: /a stream that ended without a finish reason/ },
    },
  ],

  finishes: {
    response: 'generate-text',
    scenario: 'text',
    set: (body, raw) => (body.candidates[0].finishReason = raw),
    cases: [
      ['STOP', STOP],
      ['FINISH_REASON_UNSPECIFIED', finish('stop', undefined), { why: 'no reason given: the answer ended as it came' }],
      ['MAX_TOKENS', finish('length', 'MAX_TOKENS')],
      ['SAFETY', finish('content_filter', 'SAFETY')],
      ['RECITATION', finish('content_filter', 'RECITATION')],
      ['BLOCKLIST', finish('content_filter', 'BLOCKLIST')],
      ['PROHIBITED_CONTENT', finish('content_filter', 'PROHIBITED_CONTENT')],
      ['SPII', finish('content_filter', 'SPII')],
      ['IMAGE_SAFETY', finish('content_filter', 'IMAGE_SAFETY')],
      ['IMAGE_PROHIBITED_CONTENT', finish('content_filter', 'IMAGE_PROHIBITED_CONTENT')],
      ['IMAGE_RECITATION', finish('content_filter', 'IMAGE_RECITATION')],
      // Gemini: "flagged for using an unsupported language" — flagged content withheld, as the safety family is; not a failure of the upstream.
      ['LANGUAGE', finish('content_filter', 'LANGUAGE'), { why: 'the candidate was flagged, as for safety: its language is unsupported' }],
      ['MALFORMED_FUNCTION_CALL', finish('error', 'MALFORMED_FUNCTION_CALL')],
      ['UNEXPECTED_TOOL_CALL', finish('error', 'UNEXPECTED_TOOL_CALL')],
      ['TOO_MANY_TOOL_CALLS', finish('error', 'TOO_MANY_TOOL_CALLS')],
      ['MALFORMED_RESPONSE', finish('error', 'MALFORMED_RESPONSE')],
      ['MISSING_THOUGHT_SIGNATURE', finish('error', 'MISSING_THOUGHT_SIGNATURE')],
      ['NO_IMAGE', finish('error', 'NO_IMAGE')],
      // src/generation/model.ts: `error` is for "an unknown reason"; Gemini documents OTHER as "Unknown reason".
      ['OTHER', finish('error', 'OTHER'), { why: 'Gemini stopped for a reason it does not say' }],
      ['IMAGE_OTHER', finish('error', 'IMAGE_OTHER'), { why: 'image generation stopped for a reason Gemini does not say' }],
      ['SOME_FUTURE_REASON', finish('error', 'SOME_FUTURE_REASON'), { why: 'a reason Sluice does not know is no clean stop' }],
    ],
  },

  errors: [
    { name: 'error-400-invalid-argument', situation: 'invalid_request', expect: { status: 400, upstreamFailure: 400, message: /max_output_tokens must be positive/ } },
    // Google refuses a bad key with 400 API_KEY_INVALID, not 401: still the gateway's credential.
    { name: 'error-400-api-key-invalid', situation: 'bad_credential', expect: { status: 502, upstreamFailure: 401 } },
    { name: 'error-403-permission-denied', situation: 'no_permission', expect: { status: 502, upstreamFailure: 403 } },
    { name: 'error-404-not-found', situation: 'not_found', expect: { status: 404, upstreamFailure: 404, message: /is not found for API version v1beta/ } },
    {
      // Gemini sends no Retry-After header: how long to wait is the body's google.rpc.RetryInfo.retryDelay.
      name: 'error-429-resource-exhausted',
      situation: 'rate_limited',
      expect: { status: 429, upstreamFailure: 429, retryAfter: '17' },
    },
    { name: 'error-500-internal', situation: 'server_error', expect: { status: 502, upstreamFailure: 500 } },
    { name: 'error-503-unavailable', situation: 'overloaded', expect: { status: 503, upstreamFailure: 503 } },
    { name: 'error-504-deadline-exceeded', situation: 'server_error', expect: { status: 502, upstreamFailure: 504 } },
  ],

  relays: [
    ['gemini.generateContent', {}, true],
    ['gemini.countTokens', {}, true],
    ['openai.chat', {}, false],
    ['anthropic.messages', {}, false],
  ],
  relay: [
    {
      // The caller's body untouched but for the output cap the catalogue sets for the model.
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
      name: 'relay-stream',
      operation: 'gemini.generateContent',
      stream: true,
      body: { contents: [{ role: 'user', parts: [{ text: 'Say hello.' }] }] },
    },
    {
      name: 'relay-stream-error',
      operation: 'gemini.generateContent',
      stream: true,
      body: { contents: [{ role: 'user', parts: [{ text: 'Say hello.' }] }] },
      error: { ...OVERLOADED, afterEvents: 2 },
    },
    {
      // countTokens' generateContentRequest must name the upstream model.
      name: 'relay-count-tokens',
      operation: 'gemini.countTokens',
      stream: false,
      body: { generateContentRequest: { model: 'models/assistant', contents: [{ role: 'user', parts: [{ text: 'Say hello.' }] }] } },
    },
  ],

  listModels: [
    {
      // The models that take generateContent, and the embedding models (embedContent, registered for embeddings, no output limit), named without `models/`; the page token goes back encoded.
      name: 'models-paged',
      pages: ['models-page-1', 'models-page-2'],
      paths: ['/v1beta/models?pageSize=1000', '/v1beta/models?pageSize=1000&pageToken=Ch5tb2RlbHMvZ2VtaW5pLWVtYmVkZGluZy0wMDE%2BLz0%3D'],
      expect: [
        { id: 'gemini-2.5-flash', ...GEMINI_FLASH, description: 'Stable version of Gemini 2.5 Flash, our mid-size multimodal model that supports up to 1 million tokens, released in June of 2025.' },
        { id: 'gemini-embedding-001', displayName: 'Gemini Embedding 001', description: 'Obtain a distributed representation of a text.', contextWindow: 2048, endpoints: ['embeddings'] },
        { id: 'gemini-2.5-pro', displayName: 'Gemini 2.5 Pro', description: 'Stable release (June 17th, 2025) of Gemini 2.5 Pro', contextWindow: 1048576, maxOutputTokens: 65536 },
      ],
    },
    { name: 'models-refused', pages: ['error-400-api-key-invalid'], paths: ['/v1beta/models?pageSize=1000'], error: { kind: 'upstream_auth_failed', status: 502, upstreamFailure: 401 } },
  ],
});
