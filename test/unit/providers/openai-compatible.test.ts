/**
 * The OpenAI-compatible adapter (src/providers/openai-compatible.ts) under the shared provider
 * conformance suite, with OpenAI's recorded answers and, where the family differs, DeepSeek's and
 * vLLM's. Sources of every fixture: test/unit/fixtures/providers/openai/README.md.
 */
import { generationRequest } from '../../../src/generation/model.js';
import { conformanceSuite } from './conformance.js';
import { choice, finish, parts, text, toolCall, usage } from './expectations.js';
import { DOCUMENT_REQUEST, SCENARIOS } from './scenarios.js';

const HELLO_TOKENS = ['Hello', '!', ' How', ' can', ' I', ' help', ' you', ' today', '?'];
const CREATED = 1764072000;
const CALLS = [
  ['call_Q8mJ3vX2kP9sL1dR7tY4wZ0e', '{"location":"Paris, France","unit":"celsius"}'],
  ['call_H5nB8cV1xM4zA7sD0fG3jK6l', '{"location":"Tokyo, Japan","unit":"celsius"}'],
] as const;
const FRAGMENTS = (city: string, country: string) => ['{"', 'location', '":"', city, `, ${country}`, '","', 'unit', '":"', 'celsius', '"}'];
const STOP = finish('stop', 'stop');
const TEXT_USAGE = usage(1212, 10, { cachedInput: 1152 });
const REFUSAL_REQUEST = generationRequest({
  model: 'assistant',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'Describe how to pick a lock, as JSON.' }] }],
  responseFormat: { type: 'json_schema', name: 'steps', schema: { type: 'object', properties: { steps: { type: 'array', items: { type: 'string' } } }, required: ['steps'], additionalProperties: false }, strict: true, description: undefined },
  maxOutputTokens: 512,
});
const REFUSAL = "I'm sorry, I can't help with that.";
/** A refusal is the words of the refusal, finished content_filter; `raw` keeps OpenAI's own "stop". */
const REFUSED = finish('content_filter', 'stop');

conformanceSuite({
  kind: 'openai',
  basePath: '/v1',
  apiKey: 'sk-test-openai-0123456789',
  credential: ['authorization', 'Bearer sk-test-openai-0123456789'],
  upstreamModel: 'gpt-4.1-mini',

  generate: [
    {
      name: 'generate-text',
      scenario: 'text',
      expect: { id: 'chatcmpl-CHd7Ym5mTq0VwzJ2b1Rk8s4XcP3aN', created: CREATED, choices: [choice(0, [text('Hello! How can I help you today?')], STOP)], usage: TEXT_USAGE },
    },
    {
      name: 'generate-document',
      request: DOCUMENT_REQUEST,
      expect: { id: 'chatcmpl-CHd7Ym5mTq0VwzJ2b1Rk8s4XcP3aN', created: CREATED, choices: [choice(0, [text('Hello! How can I help you today?')], STOP)], usage: TEXT_USAGE },
    },
    {
      name: 'generate-tools',
      scenario: 'tools',
      expect: {
        id: 'chatcmpl-CHd7ZpQ2rT6uW9xY1aB4cD7eF0gHj',
        created: CREATED,
        choices: [choice(0, CALLS.map(([id, args]) => toolCall(id, 'get_weather', args)), finish('tool_calls', 'tool_calls'))],
        usage: usage(94, 52),
      },
    },
    {
      name: 'generate-tool-result',
      scenario: 'toolResult',
      expect: { id: 'chatcmpl-CHd80aK3sL6mN9pQ2rS5tU8vW1xYz', created: CREATED, choices: [choice(0, [text('It is 18°C and sunny in Paris right now.')], STOP)], usage: usage(128, 13) },
    },
    {
      name: 'generate-reasoning',
      scenario: 'reasoning',
      model: { upstream_model: 'o4-mini' },
      expect: { id: 'chatcmpl-CHd81bM4tN7oP0qR3sT6uV9wX2yZa', created: CREATED, choices: [choice(0, [text('27 × 43 = 1161.')], STOP)], usage: usage(13, 210, { reasoning: 192 }) },
    },
    {
      // DeepSeek's reasoner: the reasoning text comes in `reasoning_content`.
      name: 'generate-reasoning-content',
      scenario: 'reasoning',
      model: { upstream_model: 'deepseek-reasoner' },
      expect: {
        id: '5c2a9f1e-7b3d-4e6a-9c8f-1d2e3f4a5b6c',
        created: CREATED,
        choices: [choice(0, [{ type: 'reasoning', text: '27 × 40 = 1080 and 27 × 3 = 81, so 1080 + 81 = 1161.' }, text('27 × 43 = 1161.')], STOP)],
        usage: usage(14, 96, { reasoning: 84 }),
      },
    },
    {
      name: 'generate-json-object',
      scenario: 'jsonObject',
      expect: { id: 'chatcmpl-CHd82cN5uO8pQ1rS4tU7vW0xY3zAb', created: CREATED, choices: [choice(0, [text('{"city":"Paris","country":"France"}')], STOP)], usage: usage(31, 10) },
    },
    {
      name: 'generate-two-choices',
      scenario: 'text',
      choices: 2,
      expect: {
        id: 'chatcmpl-CHd83dO6vP9qR2sT5uV8wX1yZ4aBc',
        created: CREATED,
        choices: [choice(0, [text('Hello! How can I help you today?')], STOP), choice(1, [text('Hi there! What can I do for you?')], STOP)],
        usage: usage(1212, 20, { cachedInput: 1152 }),
      },
    },
    {
      name: 'generate-logprobs',
      request: { ...SCENARIOS.text.request, logprobs: { top: 2 } },
      expect: {
        id: 'chatcmpl-CHd84eP7wQ0rS3tU6vW9xY2zA5bCd',
        created: CREATED,
        choices: [
          choice(0, [text('Hello!')], STOP, [
            { token: 'Hello', logprob: -0.00091, bytes: [72, 101, 108, 108, 111], top: [{ token: 'Hello', logprob: -0.00091, bytes: [72, 101, 108, 108, 111] }, { token: 'Hi', logprob: -7.0625, bytes: [72, 105] }] },
            { token: '!', logprob: -0.00012, bytes: [33], top: [{ token: '!', logprob: -0.00012, bytes: [33] }, { token: ',', logprob: -9.25, bytes: [44] }] },
          ]),
        ],
        usage: usage(1212, 2, { cachedInput: 1152 }),
      },
    },
    {
      // Structured outputs: a refusal comes in `message.refusal`, with content null and finish_reason "stop".
      name: 'generate-refusal',
      request: REFUSAL_REQUEST,
      expect: { id: 'chatcmpl-CHd85fQ8xR1sT4uV7wX0yZ3aB6cDe', created: CREATED, choices: [choice(0, [text(REFUSAL)], REFUSED)], usage: usage(96, 11) },
    },
  ],

  stream: [
    {
      name: 'stream-text',
      scenario: 'text',
      expect: [parts.start('chatcmpl-CHd90gR9yS2tU5vW8xY1zA4bC7dEf', CREATED), ...parts.texts(HELLO_TOKENS), parts.finish(STOP), parts.usage(TEXT_USAGE)],
    },
    {
      name: 'stream-tools',
      scenario: 'tools',
      expect: [
        parts.start('chatcmpl-CHd91hS0zT3uV6wX9yZ2aB5cD8eFg', CREATED),
        parts.toolStart(0, CALLS[0][0], 'get_weather'),
        ...parts.toolDeltas(0, FRAGMENTS('Paris', 'France')),
        parts.toolStart(1, CALLS[1][0], 'get_weather'),
        ...parts.toolDeltas(1, FRAGMENTS('Tokyo', 'Japan')),
        // OpenAI never says a call is complete: every open call ends with the choice's finish.
        parts.toolEnd(0),
        parts.toolEnd(1),
        parts.finish(finish('tool_calls', 'tool_calls')),
        parts.usage(usage(94, 52)),
      ],
    },
    {
      name: 'stream-reasoning',
      scenario: 'reasoning',
      model: { upstream_model: 'o4-mini' },
      expect: [
        parts.start('chatcmpl-CHd92iT1aU4vW7xY0zA3bC6dE9fGh', CREATED),
        ...parts.texts(['27', ' ×', ' 43', ' =', ' 1161', '.']),
        parts.finish(STOP),
        parts.usage(usage(13, 210, { reasoning: 192 })),
      ],
    },
    {
      name: 'stream-reasoning-content',
      scenario: 'reasoning',
      model: { upstream_model: 'deepseek-reasoner' },
      expect: [
        parts.start('9b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e', CREATED),
        parts.reasoning('27 × 40 = 1080'),
        parts.reasoning(' and 27 × 3 = 81'),
        parts.reasoning(', so 1080 + 81 = 1161.'),
        ...parts.texts(['27 × 43', ' = 1161', '.']),
        parts.finish(STOP),
        parts.usage(usage(14, 96, { reasoning: 84 })),
      ],
    },
    {
      name: 'stream-two-choices',
      scenario: 'text',
      choices: 2,
      expect: [
        parts.start('chatcmpl-CHd93jU2bV5wX8yZ1aB4cD7eF0gHi', CREATED),
        ...['Hi', ' there', '!', ' What', ' can', ' I', ' do', ' for', ' you', '?'].flatMap((other, i) => [...(i < HELLO_TOKENS.length ? [parts.text(HELLO_TOKENS[i]!)] : []), parts.text(other, 1)]),
        parts.finish(STOP, 0),
        parts.finish(STOP, 1),
        parts.usage(usage(1212, 20, { cachedInput: 1152 })),
      ],
    },
    {
      // Streamed, the refusal comes in `delta.refusal` fragments, content null, then finish_reason "stop".
      name: 'stream-refusal',
      request: REFUSAL_REQUEST,
      expect: [parts.start('chatcmpl-CHd94kV3cW6xY9zA2bC5dE8fG1hIj', CREATED), ...parts.texts(["I'm sorry", ", I can't", ' help with that.']), parts.finish(REFUSED), parts.usage(usage(96, 11))],
    },
    {
      name: 'stream-error',
      scenario: 'text',
      expect: [parts.start('chatcmpl-CHd90gR9yS2tU5vW8xY1zA4bC7dEf', CREATED), ...parts.texts(['Hello', '!'])],
      error: { kind: 'upstream_error', status: 502, upstreamFailure: 500, message: /failed mid-stream: The server had an error while processing your request/ },
    },
    {
      name: 'stream-truncated',
      scenario: 'text',
      expect: [parts.start('chatcmpl-CHd90gR9yS2tU5vW8xY1zA4bC7dEf', CREATED), ...parts.texts(HELLO_TOKENS.slice(0, 7))],
      error: { kind: 'upstream_error', status: 502, upstreamFailure: 502, message: /a stream that ended before \[DONE\]/ },
    },
  ],

  finishes: {
    response: 'generate-text',
    scenario: 'text',
    set: (body, raw) => (body.choices[0].finish_reason = raw),
    cases: [
      ['stop', finish('stop', 'stop')],
      ['length', finish('length', 'length')],
      ['tool_calls', finish('tool_calls', 'tool_calls')],
      ['function_call', finish('tool_calls', 'function_call')],
      ['content_filter', finish('content_filter', 'content_filter')],
    ],
  },

  errors: [
    { name: 'error-400-context-length', situation: 'invalid_request', expect: { status: 400, upstreamFailure: 400, type: 'invalid_request_error', code: 'context_length_exceeded', message: /maximum context length is 128000 tokens/ } },
    { name: 'error-401-invalid-api-key', situation: 'bad_credential', expect: { status: 502, upstreamFailure: 401 } },
    { name: 'error-401-vllm', situation: 'bad_credential', expect: { status: 502, upstreamFailure: 401 } },
    { name: 'error-403-region', situation: 'no_permission', expect: { status: 502, upstreamFailure: 403 } },
    { name: 'error-404-model-not-found', situation: 'not_found', expect: { status: 404, upstreamFailure: 404, type: 'invalid_request_error', code: 'model_not_found', message: /does not exist or you do not have access/ } },
    { name: 'error-429-rate-limit', situation: 'rate_limited', expect: { status: 429, upstreamFailure: 429, retryAfter: '20', message: /Retry after 20 seconds/ } },
    { name: 'error-429-insufficient-quota', situation: 'rate_limited', expect: { status: 429, upstreamFailure: 429 } },
    { name: 'error-500-server-error', situation: 'server_error', expect: { status: 502, upstreamFailure: 500 } },
    { name: 'error-503-overloaded', situation: 'overloaded', expect: { status: 503, upstreamFailure: 503 } },
  ],

  relays: [
    ['openai.chat', {}, true],
    ['openai.completions', { upstream_api: 'completions' }, true],
    ['openai.completions', { upstream_api: 'chat' }, false],
    ['openai.responses', { upstream_api: 'responses' }, true],
    ['openai.responses', { upstream_api: 'chat' }, false],
    ['anthropic.messages', {}, false],
    ['gemini.generateContent', {}, false],
  ],
  relay: [
    {
      // vLLM's own sampling fields go upstream untouched; only `model` is rewritten.
      name: 'relay-chat',
      operation: 'openai.chat',
      stream: false,
      model: { upstream_model: 'Qwen/Qwen3-8B' },
      body: { model: 'assistant', messages: [{ role: 'user', content: 'Say hello.' }], max_tokens: 64, min_p: 0.05, chat_template_kwargs: { enable_thinking: false } },
    },
    {
      // Usage is always asked for, beside the caller's own stream options.
      name: 'relay-chat-stream',
      operation: 'openai.chat',
      stream: true,
      body: { model: 'assistant', messages: [{ role: 'user', content: 'Say hello.' }], stream: true, stream_options: { include_obfuscation: false } },
    },
    {
      name: 'relay-chat-stream-error',
      operation: 'openai.chat',
      stream: true,
      body: { model: 'assistant', messages: [{ role: 'user', content: 'Say hello.' }], stream: true },
      error: { kind: 'upstream_error', status: 502, upstreamFailure: 500, afterEvents: 4, message: /failed mid-stream: The server had an error/ },
    },
    {
      name: 'relay-completions',
      operation: 'openai.completions',
      stream: false,
      model: { upstream_model: 'gpt-3.5-turbo-instruct', upstream_api: 'completions' },
      body: { model: 'assistant', prompt: 'Say hello.', max_tokens: 16, logprobs: 1, echo: false },
    },
    {
      name: 'relay-responses-stream',
      operation: 'openai.responses',
      stream: true,
      model: { upstream_api: 'responses' },
      body: { model: 'assistant', input: 'Say hello.', stream: true },
    },
  ],

  listModels: [
    {
      // /v1/models answers in one page; a server that pages does it OpenAI's cursor way (has_more, last_id → after).
      name: 'models-paged',
      pages: ['models-page-1', 'models-page-2'],
      paths: ['/v1/models', '/v1/models?after=gpt-4.1-mini'],
      expect: [
        { id: 'gpt-4.1', ownedBy: 'system', created: 1744316542 },
        { id: 'gpt-4.1-mini', ownedBy: 'system', created: 1744317547 },
        { id: 'o4-mini', ownedBy: 'system', created: 1744225351 },
      ],
    },
    {
      name: 'models-vllm',
      pages: ['models-vllm'],
      paths: ['/v1/models'],
      expect: [
        { id: 'Qwen/Qwen3-8B', ownedBy: 'vllm', created: CREATED, contextWindow: 32768 },
        { id: 'sql-lora', ownedBy: 'vllm', created: CREATED, contextWindow: 32768 },
      ],
    },
    { name: 'models-refused', pages: ['error-401-invalid-api-key'], paths: ['/v1/models'], error: { kind: 'upstream_auth_failed', status: 502, upstreamFailure: 401 } },
  ],
});
