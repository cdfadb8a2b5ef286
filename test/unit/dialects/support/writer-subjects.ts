import pino from 'pino';
import { anthropicMessages } from '../../../../src/dialects/anthropic/messages/operation.js';
import { geminiGenerateContent } from '../../../../src/dialects/gemini/generate/operation.js';
import { chatCompletions } from '../../../../src/dialects/openai/chat/operation.js';
import { legacyCompletions } from '../../../../src/dialects/openai/legacy/operation.js';
import { Conversations } from '../../../../src/dialects/openai/responses/conversation.js';
import { responsesOperation } from '../../../../src/dialects/openai/responses/operation.js';
import type { Operation, ParsedRequest } from '../../../../src/generation/operation.js';
import type { WireOperation } from '../../../../src/generation/provider.js';
import type { Framing } from './framing.js';
import type { Scenario } from './scenarios.js';
import { type ResponsesRepository } from '../../../../src/core/stored-responses.js';

export interface WireRequestFixture {
  readonly path: string;
  readonly query: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Record<string, unknown>;
}

export interface Variant {
  /** The snapshot's suffix. */
  readonly name: string;
  readonly stream: boolean;
  readonly framing?: Framing;
  /** Scenarios this variant is written for (default: all), `relay` for the relayed answer. */
  readonly only?: readonly string[];
  /** How the request differs for this variant. */
  readonly adjust?: (request: WireRequestFixture) => WireRequestFixture;
}

/** One caller operation as the writer checks drive it: its request for a scenario, the ways it answers. */
export interface WriterSubject {
  readonly name: WireOperation;
  readonly folder: string;
  readonly operation: Operation<ParsedRequest>;
  /** What its callers can ask for beyond one plain answer. */
  readonly can: ReadonlySet<'choices' | 'logprobs'>;
  /** The kind of upstream that takes this operation's wire as it came (see relay.upstream.json). */
  readonly relayKind: 'openai' | 'anthropic' | 'gemini';
  request(scenario: Scenario | undefined, stream: boolean): WireRequestFixture;
  readonly variants: readonly Variant[];
}

/**
 * The Responses operation keeps conversations in the store; a request with `store: false` and no
 * `previous_response_id` never reads or writes it, which this repository makes sure of.
 */
const NO_STORE = new Proxy({} as ResponsesRepository, {
  get: (_target, name) => () => {
    throw new Error(`the store was used (${String(name)}) by a request that keeps nothing`);
  },
});

const PROMPT = 'Say hello.';

export const WRITER_SUBJECTS: readonly WriterSubject[] = [
  {
    name: 'openai.completions',
    relayKind: 'openai',
    folder: 'openai-completions',
    operation: legacyCompletions as Operation<ParsedRequest>,
    can: new Set(['choices', 'logprobs']),
    request: (scenario, stream) => ({
      path: '/v1/completions',
      query: '',
      headers: {},
      body: {
        model: 'gpt-3.5-turbo-instruct',
        prompt: PROMPT,
        max_tokens: 16,
        ...(scenario?.asks?.choices === undefined ? {} : { n: scenario.asks.choices }),
        ...(scenario?.asks?.logprobs === undefined ? {} : { logprobs: scenario.asks.logprobs }),
        ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
      },
    }),
    variants: [
      { name: 'whole', stream: false },
      { name: 'stream', stream: true, framing: 'openai-data' },
      { name: 'stream-without-usage-chunk', stream: true, framing: 'openai-data', only: ['text', 'failure', 'relay'], adjust: withoutStreamOptions },
      { name: 'stream-echo', stream: true, framing: 'openai-data', only: ['text', 'two-choices'], adjust: (r) => ({ ...r, body: { ...r.body, echo: true } }) },
    ],
  },
  {
    name: 'openai.chat',
    relayKind: 'openai',
    folder: 'openai-chat',
    operation: chatCompletions as Operation<ParsedRequest>,
    can: new Set(['choices', 'logprobs']),
    request: (scenario, stream) => ({
      path: '/v1/chat/completions',
      query: '',
      headers: {},
      body: {
        model: 'gpt-4.1-mini',
        messages: [{ role: 'user', content: PROMPT }],
        ...(scenario?.asks?.choices === undefined ? {} : { n: scenario.asks.choices }),
        ...(scenario?.asks?.logprobs === undefined ? {} : { logprobs: true, top_logprobs: scenario.asks.logprobs }),
        ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
      },
    }),
    variants: [
      { name: 'whole', stream: false },
      { name: 'stream', stream: true, framing: 'openai-data' },
      { name: 'stream-without-usage-chunk', stream: true, framing: 'openai-data', only: ['text', 'failure', 'relay'], adjust: withoutStreamOptions },
    ],
  },
  {
    name: 'openai.responses',
    relayKind: 'openai',
    folder: 'openai-responses',
    operation: responsesOperation(new Conversations(NO_STORE, 30, pino({ level: 'silent' }))) as Operation<ParsedRequest>,
    can: new Set(),
    request: (_scenario, stream) => ({
      path: '/v1/responses',
      query: '',
      headers: {},
      body: { model: 'gpt-5', input: PROMPT, store: false, ...(stream ? { stream: true } : {}) },
    }),
    variants: [
      { name: 'whole', stream: false },
      { name: 'stream', stream: true, framing: 'named-events' },
    ],
  },
  {
    name: 'anthropic.messages',
    relayKind: 'anthropic',
    folder: 'anthropic-messages',
    operation: anthropicMessages as Operation<ParsedRequest>,
    can: new Set(),
    request: (_scenario, stream) => ({
      path: '/v1/messages',
      query: '',
      headers: { 'anthropic-version': '2023-06-01' },
      body: { model: 'claude-sonnet-4-5', max_tokens: 1024, messages: [{ role: 'user', content: PROMPT }], ...(stream ? { stream: true } : {}) },
    }),
    variants: [
      { name: 'whole', stream: false },
      { name: 'stream', stream: true, framing: 'named-events' },
    ],
  },
  {
    name: 'gemini.generateContent',
    relayKind: 'gemini',
    folder: 'gemini-generate-content',
    operation: geminiGenerateContent as Operation<ParsedRequest>,
    can: new Set(['choices', 'logprobs']),
    request: (scenario, stream) => {
      const config: Record<string, unknown> = {};
      if (scenario?.asks?.choices !== undefined) config.candidateCount = scenario.asks.choices;
      if (scenario?.asks?.logprobs !== undefined) Object.assign(config, { responseLogprobs: true, logprobs: scenario.asks.logprobs });
      if (scenario?.asks?.thoughts === true) config.thinkingConfig = { includeThoughts: true };
      return {
        path: `/v1beta/models/gemini-2.5-flash:${stream ? 'streamGenerateContent' : 'generateContent'}`,
        query: stream ? 'alt=sse' : '',
        headers: {},
        body: { contents: [{ role: 'user', parts: [{ text: PROMPT }] }], ...(Object.keys(config).length === 0 ? {} : { generationConfig: config }) },
      };
    },
    variants: [
      { name: 'whole', stream: false },
      { name: 'stream', stream: true, framing: 'gemini-sse' },
      { name: 'stream-json-array', stream: true, framing: 'gemini-array', only: ['text', 'tool-calls', 'empty', 'failure', 'relay'], adjust: (r) => ({ ...r, query: '' }) },
      // Thoughts the caller did not ask to see: only their signatures reach it.
      { name: 'whole-thoughts-hidden', stream: false, only: ['reasoning', 'redacted-reasoning'], adjust: withoutGenerationConfig },
      { name: 'stream-thoughts-hidden', stream: true, framing: 'gemini-sse', only: ['reasoning', 'redacted-reasoning'], adjust: withoutGenerationConfig },
    ],
  },
];

function withoutStreamOptions(request: WireRequestFixture): WireRequestFixture {
  const { stream_options: _, ...body } = request.body;
  return { ...request, body };
}

function withoutGenerationConfig(request: WireRequestFixture): WireRequestFixture {
  const { generationConfig: _, ...body } = request.body;
  return { ...request, body };
}
