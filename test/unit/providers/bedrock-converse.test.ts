/**
 * The Bedrock Converse mapping (src/providers/bedrock/converse.ts), in process: requests built for
 * each feature against the bodies AWS documents, recorded Converse answers and ConverseStream event
 * sequences read back into the generation model. The provider around it (signing, HTTP, the
 * event-stream framing) is tested end to end in test/bedrock.test.ts. Sources of every fixture:
 * test/unit/fixtures/providers/bedrock/converse/README.md.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand, type ConverseCommandInput } from '@aws-sdk/client-bedrock-runtime';
import { HttpResponse, type HttpRequest } from '@smithy/protocol-http';
import { modelFromConfig, type CatalogueModel } from '../../../src/catalogue/catalogue.js';
import { modelSchema } from '../../../src/config/config-file.js';
import { GatewayError } from '../../../src/core/errors.js';
import { generationRequest, type GenerationRequest, type GenerationResult, type Message, type StreamPart } from '../../../src/generation/model.js';
import { MAX_DOCUMENTS, converseRequest, converseResult, documentName, converseStreamParts, isAnthropicModel, type ConverseStreamEvent } from '../../../src/providers/bedrock/converse.js';
import { DEFAULT_MAX_OUTPUT_TOKENS } from '../../../src/providers/translating-provider.js';
import type { Json } from '../../../src/providers/upstream-client.js';
import { eventFrame } from '../../fakes/fake-bedrock.js';
import { answerOfChoice, answerOfParts, assertAnswer, assertStreamContract } from './conformance.js';
import { choice, finish, parts, text, toolCall, usage } from './expectations.js';
import { DOCUMENT_REQUEST, SCENARIOS, type ScenarioName } from './scenarios.js';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'providers', 'bedrock', 'converse');
const fixture = <T = Json>(path: string): T => JSON.parse(readFileSync(join(FIXTURES, path), 'utf8')) as T;

const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const NOVA = 'amazon.nova-pro-v1:0';
const LLAMA = 'meta.llama3-1-70b-instruct-v1:0';
const PROVIDER = 'bedrock-us';

const modelOf = (upstream_model = CLAUDE, more: { max_output_tokens?: number } = {}): CatalogueModel =>
  modelFromConfig(modelSchema.parse({ id: 'assistant', provider: PROVIDER, upstream_model, endpoints: ['chat'], ...more }));

const user = (value: string): Message => ({ role: 'user', content: [{ type: 'text', text: value }] });
const ask = (fields: Partial<GenerationRequest> = {}): GenerationRequest => generationRequest({ model: 'assistant', messages: [user('Hi')], ...fields });

const HELLO = 'Hello! How can I help you today?';
const SIGNATURE =
  'ErcBCkgIAxABGAIiQL8vXm3yJ0K5pQ1cT7wZsN4hF2aD9eR6uY0iO3lK8jH5gB1vC4xM7nQ2tW9sA6dE0fG3hJ5kL8zX1cV4bN7mEgzQ2wE4rT6yU8iO0pAaDA3sD5fG7hJ9kL1zX3cV';
const REDACTED = 'RXFBVkNrZ0lBeEFCR0FJaVFQcjN2WA==';
const TOOL_IDS = ['tooluse_kZJMlvQmRJ6eAyJE5GIl7Q', 'tooluse_Ql8hWz3NS0y4bXcV1mTq2A'] as const;
const END_TURN = finish('stop', 'end_turn');
const WEATHER_ARGS = (location: string) => JSON.stringify({ location, unit: 'celsius' });

/** `created` is stamped by the mapping: within the test's run, then left out of the comparison. */
function withoutCreated<T extends { created: number }>(value: T, from: number): Omit<T, 'created'> {
  const { created, ...rest } = value;
  assert.ok(created >= from && created <= Math.ceil(Date.now() / 1000), 'created is now, in Unix seconds');
  return rest;
}

const result = (name: string): GenerationResult => converseResult(fixture(`responses/${name}.json`), PROVIDER);

async function* replay(events: readonly ConverseStreamEvent[]): AsyncGenerator<ConverseStreamEvent> {
  for (const event of events) yield event;
}

async function streamed(events: readonly ConverseStreamEvent[]): Promise<{ parts: StreamPart[]; failure: unknown }> {
  const out: StreamPart[] = [];
  try {
    for await (const part of converseStreamParts(replay(events), PROVIDER)) out.push(part);
  } catch (failure) {
    return { parts: out, failure };
  }
  return { parts: out, failure: undefined };
}

/** A recorded stream's parts, checked against the stream contract, `start`'s time replaced by 0. */
async function streamOf(name: string): Promise<StreamPart[]> {
  const from = Math.floor(Date.now() / 1000);
  const { parts: out, failure } = await streamed(fixture<ConverseStreamEvent[]>(`responses/${name}.json`));
  assert.equal(failure, undefined, `the stream ended cleanly (${String(failure)})`);
  assertStreamContract(out, 1, true);
  return out.map((part) => (part.type === 'start' ? { ...withoutCreated(part, from), created: 0 } : part));
}

function refused(request: GenerationRequest, model: CatalogueModel, param: string, words: RegExp): void {
  assert.throws(
    () => converseRequest(request, model),
    (error: unknown) => error instanceof GatewayError && error.status === 400 && error.param === param && /Model `assistant` cannot take/.test(error.message) && words.test(error.message) && /Amazon Bedrock Converse API/.test(error.message),
  );
}

describe('Bedrock Converse: the shared scenarios', () => {
  const cases: readonly (readonly [ScenarioName, request: string, whole: string, stream: string | undefined])[] = [
    ['text', 'text', 'generate-text', 'stream-text'],
    ['tools', 'tools', 'generate-tools', 'stream-tools'],
    ['toolResult', 'tool-result', 'generate-tool-result', undefined],
    ['reasoning', 'reasoning', 'generate-reasoning', 'stream-reasoning'],
    ['jsonObject', 'json-object', 'generate-json-object', 'stream-json-object'],
  ];
  for (const [scenario, request, whole, stream] of cases) {
    // Converse reports no reasoning tokens (its usage has none), so that part of the answer cannot hold.
    const answer = { ...SCENARIOS[scenario].answer, reasoning: false };
    test(`${scenario}: the request`, () => {
      assert.deepStrictEqual(converseRequest(SCENARIOS[scenario].request, modelOf()), fixture(`requests/${request}.json`));
    });
    test(`${scenario}: the whole answer`, () => {
      const answered = result(whole);
      assert.equal(answered.choices.length, 1);
      assertAnswer(answerOfChoice(answered.choices[0]!, answered.usage), answer);
    });
    if (stream !== undefined) {
      test(`${scenario}: the stream`, async () => {
        const out = await streamOf(stream);
        assertAnswer(answerOfParts(out), answer);
      });
    }
  }
});

describe('Bedrock Converse: whole answers', () => {
  test('text, with usage: inputTokens leaves the cached part out, Sluice counts it in', () => {
    const from = Math.floor(Date.now() / 1000);
    assert.deepStrictEqual(withoutCreated(result('generate-text'), from), { id: '', choices: [choice(0, [text(HELLO)], END_TURN)], usage: usage(1209, 12, { cachedInput: 1188 }) });
  });

  test('a cache write lands in cacheWrite, counted in the input', () => {
    assert.deepStrictEqual(result('generate-cache-write').usage, usage(1209, 12, { cacheWrite: 1188 }));
  });

  test('tool calls keep their ids, names and input as JSON text', () => {
    const answered = result('generate-tools');
    assert.deepStrictEqual(answered.choices, [
      choice(0, [text("I'll check the weather in both cities."), toolCall(TOOL_IDS[0], 'get_weather', WEATHER_ARGS('Paris, France')), toolCall(TOOL_IDS[1], 'get_weather', WEATHER_ARGS('Tokyo, Japan'))], finish('tool_calls', 'tool_use')),
    ]);
    assert.deepStrictEqual(answered.usage, usage(412, 98));
  });

  test('reasoning comes with its signature, redacted reasoning as its data', () => {
    assert.deepStrictEqual(result('generate-reasoning').choices[0]!.content, [
      { type: 'reasoning', text: '27 * 43 = 27 * 40 + 27 * 3 = 1080 + 81 = 1161.', signature: SIGNATURE },
      text('27 × 43 = 1161.'),
    ]);
    assert.deepStrictEqual(result('generate-redacted-reasoning').choices[0]!.content, [
      { type: 'reasoning', text: '', redactedData: REDACTED },
      { type: 'reasoning', text: 'The product is 1161.', signature: SIGNATURE },
      text('27 × 43 = 1161.'),
    ]);
  });

  test("JSON mode's tool call is the answer's text, and the answer ends as a turn does", () => {
    const answered = result('generate-json-object');
    assert.deepStrictEqual(answered.choices, [choice(0, [text('{"city":"Paris","country":"France"}')], END_TURN)]);
  });

  test('a stop sequence: which one, from the model fields asked for', () => {
    assert.deepStrictEqual(result('generate-stop-sequence').choices[0]!.finish, finish('stop', 'stop_sequence', '\n\n'));
    // Only Claude is asked for them.
    assert.equal(converseRequest(ask({ stop: ['END'] }), modelOf(NOVA)).additionalModelResponseFieldPaths, undefined);
  });

  test('a guardrail that intervened is a content filter, its message the text', () => {
    assert.deepStrictEqual(result('generate-guardrail').choices, [choice(0, [text('Sorry, the model cannot answer this question.')], finish('content_filter', 'guardrail_intervened'))]);
  });

  test('every stop reason Converse documents', () => {
    const body = fixture('responses/generate-text.json');
    const table = [
      ['end_turn', finish('stop', 'end_turn')],
      ['stop_sequence', finish('stop', 'stop_sequence')],
      ['tool_use', finish('tool_calls', 'tool_use')],
      ['max_tokens', finish('length', 'max_tokens')],
      ['model_context_window_exceeded', finish('length', 'model_context_window_exceeded')],
      ['guardrail_intervened', finish('content_filter', 'guardrail_intervened')],
      ['content_filtered', finish('content_filter', 'content_filtered')],
      ['malformed_model_output', finish('error', 'malformed_model_output')],
      ['malformed_tool_use', finish('error', 'malformed_tool_use')],
      ['a_reason_added_later', finish('error', 'a_reason_added_later')],
    ] as const;
    for (const [raw, expected] of table) assert.deepStrictEqual(converseResult({ ...body, stopReason: raw }, PROVIDER).choices[0]!.finish, expected, raw);
  });

  test('an answer without usage reports none; one without output.message.content is unreadable', () => {
    const { usage: _usage, ...body } = fixture('responses/generate-text.json');
    assert.equal(converseResult(body, PROVIDER).usage, null);
    for (const broken of [{}, { output: {} }, { output: { message: { role: 'assistant' } } }, { output: { message: { content: 'Hello' } } }]) {
      assert.throws(
        () => converseResult(broken, PROVIDER),
        (error: unknown) => error instanceof GatewayError && error.kind === 'upstream_error' && error.upstreamFailure === 502 && error.message.includes(`'${PROVIDER}'`),
      );
    }
  });
});

describe('Bedrock Converse: streams', () => {
  const start = parts.start('', 0);

  test('text: finish at messageStop, then usage from metadata', async () => {
    assert.deepStrictEqual(await streamOf('stream-text'), [
      start,
      ...parts.texts(['Hello!', ' How can I help', ' you today?']),
      parts.finish(END_TURN),
      parts.usage(usage(1209, 12, { cachedInput: 1188 })),
    ]);
  });

  test('tool calls: start with id and name, input fragments (the empty one left out), end', async () => {
    assert.deepStrictEqual(await streamOf('stream-tools'), [
      start,
      ...parts.texts(["I'll check the weather", ' in both cities.']),
      parts.toolStart(0, TOOL_IDS[0], 'get_weather'),
      ...parts.toolDeltas(0, ['{"location": "Paris', ', France", "unit": "celsius"}']),
      parts.toolEnd(0),
      parts.toolStart(1, TOOL_IDS[1], 'get_weather'),
      ...parts.toolDeltas(1, ['{"location": "Tokyo, Japan", ', '"unit": "celsius"}']),
      parts.toolEnd(1),
      parts.finish(finish('tool_calls', 'tool_use')),
      parts.usage(usage(412, 98)),
    ]);
  });

  test('reasoning text, then its signature, then the answer', async () => {
    assert.deepStrictEqual(await streamOf('stream-reasoning'), [
      start,
      parts.reasoning('27 * 43 = 27 * 40 + 27 * 3'),
      parts.reasoning(' = 1080 + 81 = 1161.'),
      parts.signature(SIGNATURE),
      ...parts.texts(['27 × 43', ' = 1161.']),
      parts.finish(END_TURN),
      parts.usage(usage(46, 138)),
    ]);
  });

  test('a stop sequence named in messageStop', async () => {
    const events = fixture<ConverseStreamEvent[]>('responses/stream-text.json').map((event) =>
      event.eventType === 'messageStop' ? { ...event, payload: { ...event.payload, stopReason: 'stop_sequence', additionalModelResponseFields: { stop_sequence: '\n\n' } } } : event,
    );
    assert.deepStrictEqual((await streamed(events)).parts.at(-2), parts.finish(finish('stop', 'stop_sequence', '\n\n')));
  });

  test('redacted reasoning', async () => {
    assert.deepStrictEqual(await streamOf('stream-redacted-reasoning'), [
      start,
      { type: 'redacted_reasoning', choice: 0, data: REDACTED },
      parts.text('27 × 43 = 1161.'),
      parts.finish(END_TURN),
      parts.usage(usage(46, 171)),
    ]);
  });

  test("JSON mode: the tool's input streams as the answer's text", async () => {
    assert.deepStrictEqual(await streamOf('stream-json-object'), [start, ...parts.texts(['{"city": "Paris"', ', "country": "France"}']), parts.finish(END_TURN), parts.usage(usage(397, 41))]);
  });

  test("JSON mode: a tool call with no input fragment is still an object", async () => {
    const events = fixture<ConverseStreamEvent[]>('responses/stream-json-object.json').filter((event) => !(event.eventType === 'contentBlockDelta' && (event.payload.delta as Json).toolUse !== undefined));
    const { parts: out } = await streamed(events);
    assert.deepStrictEqual(
      out.filter((part) => part.type === 'text'),
      [parts.text('{}')],
    );
  });

  test('a stream without metadata finishes without usage (the meter counts then)', async () => {
    const events = fixture<ConverseStreamEvent[]>('responses/stream-text.json').filter((event) => event.eventType !== 'metadata');
    const { parts: out, failure } = await streamed(events);
    assert.equal(failure, undefined);
    assertStreamContract(out, 1, true);
    assert.equal(out.at(-1)?.type, 'finish');
  });

  test('metadata before messageStop still comes after the finish, once; no content after the finish', async () => {
    const events = fixture<ConverseStreamEvent[]>('responses/stream-text.json');
    const metadata = events.at(-1)!;
    const { parts: out } = await streamed([...events.slice(0, -2), metadata, events.at(-2)!, events[1]!, metadata]);
    assertStreamContract(out, 1, true);
    assert.deepStrictEqual(out.slice(-2), [parts.finish(END_TURN), parts.usage(usage(1209, 12, { cachedInput: 1188 }))]);
  });

  test('a stream cut before messageStop, or not opening with messageStart, is an unreadable upstream', async () => {
    const events = fixture<ConverseStreamEvent[]>('responses/stream-text.json');
    const unreadable = (failure: unknown, words: RegExp) =>
      assert.ok(failure instanceof GatewayError && failure.kind === 'upstream_error' && failure.upstreamFailure === 502 && words.test(failure.message), String(failure));
    const cut = await streamed(events.slice(0, 4));
    unreadable(cut.failure, /ended before messageStop/);
    assert.deepStrictEqual(cut.parts.slice(1), parts.texts(['Hello!', ' How can I help', ' you today?']), 'the parts before the cut');
    unreadable((await streamed(events.slice(1))).failure, /began with contentBlockDelta/);
  });
});

describe('Bedrock Converse: requests', () => {
  test('system prompts and cache points', () => {
    const request = ask({
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'Rules.', cacheBreakpoint: true }, { type: 'text', text: 'More rules.' }] },
        { role: 'user', content: [{ type: 'text', text: 'A long document.', cacheBreakpoint: true }, { type: 'text', text: 'The question?' }] },
      ],
    });
    const body = converseRequest(request, modelOf());
    assert.deepStrictEqual(body.system, [{ text: 'Rules.' }, { cachePoint: { type: 'default' } }, { text: 'More rules.' }]);
    assert.deepStrictEqual(body.messages, [{ role: 'user', content: [{ text: 'A long document.' }, { cachePoint: { type: 'default' } }, { text: 'The question?' }] }]);
    // Nova caches too; Llama has no prompt caching on Bedrock, and goes without the markers.
    assert.deepStrictEqual(converseRequest(request, modelOf(NOVA)).system, body.system);
    assert.deepStrictEqual(converseRequest(request, modelOf(LLAMA)), { messages: [{ role: 'user', content: [{ text: 'A long document.' }, { text: 'The question?' }] }], system: [{ text: 'Rules.' }, { text: 'More rules.' }] });
  });

  test('images go as bytes with their format', () => {
    const body = converseRequest(ask({ messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image', source: { kind: 'inline', mediaType: 'image/png', data: 'iVBORw0KGgo=' } }] }] }), modelOf());
    assert.deepStrictEqual(body.messages, [{ role: 'user', content: [{ text: 'What is this?' }, { image: { format: 'png', source: { bytes: 'iVBORw0KGgo=' } } }] }]);
  });

  test('documents go as bytes with their format and a name Converse takes', () => {
    assert.deepStrictEqual(converseRequest(DOCUMENT_REQUEST, modelOf()), fixture('requests/documents.json'));
  });

  test("a document's name is made one Converse takes, and kept distinct from the others'", () => {
    assert.equal(documentName('Q3  report (final) [v2] – draft.pdf', 1), 'Q3 report (final) [v2] draft');
    assert.equal(documentName('../../etc/passwd', 1), 'etc passwd');
    assert.equal(documentName('日本語.pdf', 3), 'document 3');
    assert.equal(documentName(undefined, 2), 'document 2');
    const pdf = (name: string) => ({ type: 'document' as const, source: { kind: 'inline' as const, mediaType: 'application/pdf' as const, data: 'JVBERi0=' }, name });
    const body = converseRequest(ask({ messages: [{ role: 'user', content: [pdf('a.pdf'), pdf('a.pdf'), pdf('a'), { type: 'text', text: 'Compare.' }] }] }), modelOf(NOVA));
    const names = (body.messages as { content: Json[] }[])[0]!.content.flatMap((block) => (block.document === undefined ? [] : [(block.document as { name: string }).name]));
    assert.deepStrictEqual(names, ['a', 'a (2)', 'a (3)']);
  });

  test('sampling, stop sequences and the output limit in inferenceConfig; top_k for Claude in additionalModelRequestFields', () => {
    const body = converseRequest(ask({ maxOutputTokens: 300, temperature: 0.5, topP: 0.8, topK: 40, stop: ['END'] }), modelOf());
    assert.deepStrictEqual(body.inferenceConfig, { maxTokens: 300, temperature: 0.5, topP: 0.8, stopSequences: ['END'] });
    assert.deepStrictEqual(body.additionalModelRequestFields, { top_k: 40 });
  });

  test("the output limit: the caller's within the model's max_output_tokens, the model's when the caller sets none, else Sluice's for Claude and Bedrock's for the others", () => {
    assert.deepStrictEqual(converseRequest(ask({ maxOutputTokens: 64000 }), modelOf(CLAUDE, { max_output_tokens: 8192 })).inferenceConfig, { maxTokens: 8192 });
    assert.deepStrictEqual(converseRequest(ask(), modelOf(LLAMA, { max_output_tokens: 8192 })).inferenceConfig, { maxTokens: 8192 });
    assert.deepStrictEqual(converseRequest(ask(), modelOf()), { messages: [{ role: 'user', content: [{ text: 'Hi' }] }], inferenceConfig: { maxTokens: DEFAULT_MAX_OUTPUT_TOKENS } });
    assert.deepStrictEqual(converseRequest(ask(), modelOf(LLAMA)), { messages: [{ role: 'user', content: [{ text: 'Hi' }] }] });
  });

  test("reasoning: Claude's thinking budget from the effort, below maxTokens; sampling held to thinking's rules", () => {
    const body = converseRequest(ask({ reasoning: { effort: 'high' }, maxOutputTokens: 16000, topK: 64, topP: 0.97 }), modelOf());
    assert.deepStrictEqual(body.inferenceConfig, { maxTokens: 16000, topP: 0.97 });
    // top_k is left out under thinking (clients send it by default), as on Anthropic's own API.
    assert.deepStrictEqual(body.additionalModelRequestFields, { thinking: { type: 'enabled', budget_tokens: 15999 } });
    refused(ask({ reasoning: { effort: 'low' }, maxOutputTokens: 1000 }), modelOf(), 'reasoning_effort', /at most 1000 output tokens/);
    refused(ask({ reasoning: { effort: 'low' }, temperature: 0.3 }), modelOf(), 'temperature', /other than 1 with reasoning/);
    refused(ask({ reasoning: { effort: 'low' }, topP: 0.5 }), modelOf(), 'top_p', /below 0.95/);
  });

  test('two turns of thinking: the reasoning goes back with its signature, redacted reasoning as it came, before the tool call', () => {
    const request = ask({
      messages: [
        user('What is the weather in Paris?'),
        {
          role: 'assistant',
          content: [
            { type: 'reasoning', text: '', redactedData: REDACTED },
            { type: 'reasoning', text: 'I should call the weather tool.', signature: SIGNATURE },
            { type: 'tool_call', id: TOOL_IDS[0], name: 'get_weather', arguments: WEATHER_ARGS('Paris, France') },
          ],
        },
        { role: 'tool', content: [{ type: 'tool_result', toolCallId: TOOL_IDS[0], name: 'get_weather', content: [{ type: 'text', text: '18°C, sunny' }] }] },
      ],
      tools: SCENARIOS.tools.request.tools,
      reasoning: { effort: 'low' },
      maxOutputTokens: 4096,
    });
    const body = converseRequest(request, modelOf());
    assert.deepStrictEqual((body.messages as Json[])[1], {
      role: 'assistant',
      content: [
        { reasoningContent: { redactedContent: REDACTED } },
        { reasoningContent: { reasoningText: { text: 'I should call the weather tool.', signature: SIGNATURE } } },
        { toolUse: { toolUseId: TOOL_IDS[0], name: 'get_weather', input: { location: 'Paris, France', unit: 'celsius' } } },
      ],
    });
    assert.deepStrictEqual((body.messages as Json[])[2], { role: 'user', content: [{ toolResult: { toolUseId: TOOL_IDS[0], content: [{ text: '18°C, sunny' }] } }] });
    assert.deepStrictEqual(body.additionalModelRequestFields, { thinking: { type: 'enabled', budget_tokens: 2048 } });
    // Reasoning without a signature came from elsewhere and cannot be checked: left out, as is all of it for another family.
    const unsigned = ask({ messages: [user('Q'), { role: 'assistant', content: [{ type: 'reasoning', text: 'hmm' }, { type: 'text', text: 'A' }] }, user('Q2')] });
    assert.deepStrictEqual((converseRequest(unsigned, modelOf()).messages as Json[])[1], { role: 'assistant', content: [{ text: 'A' }] });
    assert.deepStrictEqual((converseRequest({ ...request, reasoning: undefined }, modelOf(NOVA)).messages as Json[])[1], {
      role: 'assistant',
      content: [{ toolUse: { toolUseId: TOOL_IDS[0], name: 'get_weather', input: { location: 'Paris, France', unit: 'celsius' } } }],
    });
  });

  test('a tool-use round trip: the answer read back goes upstream as the next turn, tool results first in a merged user turn', () => {
    const answered = result('generate-tools').choices[0]!;
    const request = ask({
      messages: [
        user('What is the weather in Paris and in Tokyo?'),
        { role: 'assistant', content: answered.content },
        { role: 'tool', content: [{ type: 'tool_result', toolCallId: TOOL_IDS[0], name: 'get_weather', content: [{ type: 'text', text: '18°C', cacheBreakpoint: true }] }] },
        { role: 'tool', content: [{ type: 'tool_result', toolCallId: TOOL_IDS[1], name: 'get_weather', content: [{ type: 'text', text: 'failed' }], isError: true }] },
        user('And tomorrow?'),
      ],
      tools: SCENARIOS.tools.request.tools,
    });
    const body = converseRequest(request, modelOf());
    assert.deepStrictEqual(body.messages, [
      { role: 'user', content: [{ text: 'What is the weather in Paris and in Tokyo?' }] },
      {
        role: 'assistant',
        content: [
          { text: "I'll check the weather in both cities." },
          { toolUse: { toolUseId: TOOL_IDS[0], name: 'get_weather', input: { location: 'Paris, France', unit: 'celsius' } } },
          { toolUse: { toolUseId: TOOL_IDS[1], name: 'get_weather', input: { location: 'Tokyo, Japan', unit: 'celsius' } } },
        ],
      },
      {
        role: 'user',
        content: [
          { toolResult: { toolUseId: TOOL_IDS[0], content: [{ text: '18°C' }] } },
          { cachePoint: { type: 'default' } },
          { toolResult: { toolUseId: TOOL_IDS[1], content: [{ text: 'failed' }], status: 'error' } },
          { text: 'And tomorrow?' },
        ],
      },
    ]);
    // The user's text before the results still comes after them.
    const textFirst = ask({ ...request, messages: [...request.messages.slice(0, 2), user('Here:'), ...request.messages.slice(2, 3)] });
    assert.deepStrictEqual(((converseRequest(textFirst, modelOf()).messages as Json[])[2]!.content as Json[]).map((block) => Object.keys(block)[0]), ['toolResult', 'cachePoint', 'text']);
    // Llama takes no status: an error result goes as its content.
    assert.deepStrictEqual(((converseRequest(request, modelOf(LLAMA)).messages as Json[])[2]!.content as Json[])[1], { toolResult: { toolUseId: TOOL_IDS[1], content: [{ text: 'failed' }] } });
  });

  test("a tool-call id Converse would refuse is rewritten, alike in the call and its result", () => {
    const id = 'fc.67f9:' + 'x'.repeat(80);
    const request = ask({
      messages: [user('Q'), { role: 'assistant', content: [{ type: 'tool_call', id, name: 'get_weather', arguments: '{}' }] }, { role: 'tool', content: [{ type: 'tool_result', toolCallId: id, name: 'get_weather', content: [{ type: 'text', text: 'ok' }] }] }],
      tools: SCENARIOS.tools.request.tools,
    });
    const messages = converseRequest(request, modelOf()).messages as { content: Json[] }[];
    const sent = (messages[1]!.content[0]!.toolUse as Json).toolUseId as string;
    assert.match(sent, /^[a-zA-Z0-9_-]{1,64}$/);
    assert.equal((messages[2]!.content[0]!.toolResult as Json).toolUseId, sent);
    const other = converseRequest({ ...request, messages: request.messages.map((m) => JSON.parse(JSON.stringify(m).replaceAll(id, id.replace('fc.', 'fc:'))) as Message) }, modelOf());
    assert.notEqual(((other.messages as { content: Json[] }[])[1]!.content[0]!.toolUse as Json).toolUseId, sent, 'ids that clean up alike stay apart');
  });

  test('tool choices: auto is the default; required is any; a named tool is tool', () => {
    const tools = SCENARIOS.tools.request.tools;
    const config = (toolChoice: GenerationRequest['toolChoice']) => converseRequest(ask({ tools, toolChoice }), modelOf()).toolConfig as Json;
    assert.equal(config({ type: 'auto' }).toolChoice, undefined);
    assert.deepStrictEqual(config({ type: 'required' }).toolChoice, { any: {} });
    assert.deepStrictEqual(config({ type: 'tool', name: 'get_weather' }).toolChoice, { tool: { name: 'get_weather' } });
    assert.deepStrictEqual(config(undefined), { tools: [(fixture('requests/tools.json').toolConfig as { tools: Json[] }).tools[0]] });
  });

  test("tool choice none: the tools are not declared; with tool calls in the conversation, where Converse needs them, it is refused", () => {
    const tools = SCENARIOS.tools.request.tools;
    assert.equal(converseRequest(ask({ tools, toolChoice: { type: 'none' } }), modelOf()).toolConfig, undefined);
    refused({ ...SCENARIOS.toolResult.request, toolChoice: { type: 'none' } }, modelOf(), 'tool_choice', /tool_choice 'none' in a conversation that holds tool calls/);
  });

  test('JSON output: json_schema through the answer tool with its schema; beside tools the caller may use, any tool', () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };
    const request = ask({ responseFormat: { type: 'json_schema', name: 'capital', schema, strict: true, description: 'A capital city' } });
    assert.deepStrictEqual(converseRequest(request, modelOf()).toolConfig, {
      tools: [{ toolSpec: { name: 'json_answer', description: "Give your answer: the JSON object asked for (A capital city), as this tool's input.", inputSchema: { json: schema } } }],
      toolChoice: { tool: { name: 'json_answer' } },
    });
    const withTools = converseRequest({ ...request, tools: SCENARIOS.tools.request.tools }, modelOf()).toolConfig as { tools: { toolSpec: Json }[]; toolChoice: Json };
    assert.deepStrictEqual(withTools.tools.map((tool) => tool.toolSpec.name), ['json_answer', 'get_weather']);
    assert.deepStrictEqual(withTools.toolChoice, { any: {} });
    // A caller forcing its own tool gets that tool's call: no answer tool.
    assert.deepStrictEqual(converseRequest({ ...request, tools: SCENARIOS.tools.request.tools, toolChoice: { type: 'required' } }, modelOf()).toolConfig, converseRequest(ask({ tools: SCENARIOS.tools.request.tools, toolChoice: { type: 'required' } }), modelOf()).toolConfig);
  });

  test("a named tool on a family without Converse's `tool` choice: `any` over that one tool", () => {
    const tools = [...SCENARIOS.tools.request.tools, { ...SCENARIOS.tools.request.tools[0]!, name: 'get_time' }];
    assert.deepStrictEqual(converseRequest(ask({ tools, toolChoice: { type: 'tool', name: 'get_time' } }), modelOf(NOVA)).toolConfig, {
      tools: tools.map((tool) => ({ toolSpec: { name: tool.name, description: tool.description, inputSchema: { json: tool.parameters } } })),
      toolChoice: { tool: { name: 'get_time' } },
    });
    assert.deepStrictEqual(converseRequest(ask({ tools, toolChoice: { type: 'tool', name: 'get_time' } }), modelOf(LLAMA)).toolConfig, {
      tools: [{ toolSpec: { name: 'get_time', description: tools[1]!.description, inputSchema: { json: tools[1]!.parameters } } }],
      toolChoice: { any: {} },
    });
    // JSON mode likewise.
    assert.deepStrictEqual(converseRequest(SCENARIOS.jsonObject.request, modelOf(LLAMA)).toolConfig, { ...(fixture('requests/json-object.json').toolConfig as Json), toolChoice: { any: {} } });
  });

  test('models of other families: no Claude-only fields', () => {
    const body = converseRequest(ask({ maxOutputTokens: 512, temperature: 0.7, stop: ['###'] }), modelOf(LLAMA));
    assert.deepStrictEqual(body, { messages: [{ role: 'user', content: [{ text: 'Hi' }] }], inferenceConfig: { maxTokens: 512, temperature: 0.7, stopSequences: ['###'] } });
  });

  test('which model ids are Anthropic’s', () => {
    for (const id of [
      'anthropic.claude-3-haiku-20240307-v1:0',
      'us.anthropic.claude-sonnet-4-5-20250929-v1:0',
      'global.anthropic.claude-opus-4-1-20250805-v1:0',
      'arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-5-sonnet-20240620-v1:0',
      'arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.anthropic.claude-3-7-sonnet-20250219-v1:0',
    ]) {
      assert.equal(isAnthropicModel(id), true, id);
    }
    for (const id of [NOVA, LLAMA, 'mistral.mistral-large-2407-v1:0', 'arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6', 'my-anthropic.thing']) {
      assert.equal(isAnthropicModel(id), false, id);
    }
  });
});

describe('Bedrock Converse: what it cannot take is refused, naming the parameter', () => {
  test('an image by URL, an image format Converse lacks', () => {
    refused(ask({ messages: [{ role: 'user', content: [{ type: 'image', source: { kind: 'url', url: 'https://example.com/cat.png' } }] }] }), modelOf(), 'image_url', /image by URL/);
    refused(ask({ messages: [{ role: 'user', content: [{ type: 'image', source: { kind: 'inline', mediaType: 'image/bmp', data: 'Qk0=' } }] }] }), modelOf(), 'image_url', /image\/bmp/);
    const inResult = ask({
      messages: [user('Q'), { role: 'assistant', content: [{ type: 'tool_call', id: 'c1', name: 'shot', arguments: '{}' }] }, { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'c1', name: 'shot', content: [{ type: 'image', source: { kind: 'url', url: 'https://example.com/s.png' } }] }] }],
      tools: SCENARIOS.tools.request.tools,
    });
    refused(inResult, modelOf(), 'image_url', /image by URL/);
  });

  test('a document by URL; more documents than Converse takes in one request', () => {
    refused(ask({ messages: [{ role: 'user', content: [{ type: 'document', source: { kind: 'url', url: 'https://example.com/a.pdf' } }, { type: 'text', text: 'Q' }] }] }), modelOf(), 'document', /document by URL/);
    const doc = { type: 'document' as const, source: { kind: 'inline' as const, mediaType: 'text/plain' as const, data: 'aGk=' } };
    const turns = (count: number): Message[] => [{ role: 'user', content: [...Array.from({ length: count }, () => doc), { type: 'text', text: 'Q' }] }];
    assert.equal((converseRequest(ask({ messages: turns(MAX_DOCUMENTS) }), modelOf()).messages as { content: Json[] }[])[0]!.content.length, MAX_DOCUMENTS + 1);
    refused(ask({ messages: turns(MAX_DOCUMENTS + 1) }), modelOf(), 'document', /more than 5 documents/);
  });

  test('top_k and reasoning on a model of another family', () => {
    refused(ask({ topK: 40 }), modelOf(NOVA), 'top_k', /top_k/);
    refused(ask({ reasoning: { effort: 'low' } }), modelOf(LLAMA), 'reasoning_effort', /reasoning/);
  });

  test("a schema whose top level is not an object; JSON output with reasoning; a tool named as the answer's", () => {
    refused(ask({ responseFormat: { type: 'json_schema', name: 'list', schema: { type: 'array', items: { type: 'string' } }, strict: undefined, description: undefined } }), modelOf(), 'response_format', /top level is not an object/);
    refused(ask({ responseFormat: { type: 'json_object' }, reasoning: { effort: 'low' } }), modelOf(), 'response_format', /together with reasoning/);
    refused(ask({ tools: [{ ...SCENARIOS.tools.request.tools[0]!, name: 'json_answer' }] }), modelOf(), 'tools', /json_answer/);
  });
});

/**
 * AWS's own client (`@aws-sdk/client-bedrock-runtime`, generated from the service's model) as a
 * second reader of the wire: what it sends for our request bodies, and what it reads from our
 * recorded answers, must be those bodies exactly. A field name AWS does not have would be dropped.
 */
describe("Bedrock Converse: AWS's own client agrees", () => {
  /** A client whose every request is answered with `body`, the last request kept. */
  function clientAnswering(contentType: string, body: Buffer[]): { client: BedrockRuntimeClient; sent: () => HttpRequest | undefined } {
    let sent: HttpRequest | undefined;
    const client = new BedrockRuntimeClient({
      region: 'us-east-1',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
      maxAttempts: 1,
      requestHandler: {
        handle: async (request: HttpRequest) => {
          sent = request;
          return { response: new HttpResponse({ statusCode: 200, headers: { 'content-type': contentType }, body: Readable.from(body) }) };
        },
      },
    });
    return { client, sent: () => sent };
  }

  /** Blobs as base64, the way the JSON wire and the fixtures carry them. */
  const asWire = (value: unknown): Json => JSON.parse(JSON.stringify(value, (_key, inner: unknown) => (inner instanceof Uint8Array ? Buffer.from(inner).toString('base64') : inner))) as Json;

  /** The body the SDK sends for `body`, and the answer it reads from `answer`. */
  async function throughSdk(body: Json, answer: Json = fixture('responses/generate-text.json')): Promise<{ sent: Json; read: Json }> {
    const { client, sent: sentRequest } = clientAnswering('application/json', [Buffer.from(JSON.stringify(answer))]);
    // The SDK takes blobs as bytes and sends them base64-encoded, as the REST-JSON wire carries them.
    const input = JSON.parse(JSON.stringify(body), (key, value: unknown) => ((key === 'bytes' || key === 'redactedContent') && typeof value === 'string' ? Buffer.from(value, 'base64') : value)) as Json;
    const { $metadata: _metadata, ...read } = await client.send(new ConverseCommand({ modelId: CLAUDE, ...input } as unknown as ConverseCommandInput));
    client.destroy();
    const sent = sentRequest();
    assert.equal(sent?.path, `/model/${encodeURIComponent(CLAUDE)}/converse`);
    const raw = sent.body as string | Uint8Array;
    return { sent: JSON.parse(typeof raw === 'string' ? raw : new TextDecoder().decode(raw)) as Json, read: asWire(read) };
  }

  test('every recorded request, and the bodies of each feature, go out as built', async () => {
    const tools = SCENARIOS.tools.request.tools;
    const bodies: Json[] = [
      ...readdirSync(join(FIXTURES, 'requests')).map((file) => fixture(`requests/${file}`)),
      converseRequest(ask({ messages: [{ role: 'system', content: [{ type: 'text', text: 'Rules.', cacheBreakpoint: true }] }, { role: 'user', content: [{ type: 'text', text: 'Look:', cacheBreakpoint: true }, { type: 'image', source: { kind: 'inline', mediaType: 'image/webp', data: 'UklGRg==' } }] }] }), modelOf()),
      converseRequest(ask({ maxOutputTokens: 300, temperature: 0.5, topP: 0.8, topK: 40, stop: ['END'], tools, toolChoice: { type: 'tool', name: 'get_weather' } }), modelOf()),
      converseRequest(ask({ tools, toolChoice: { type: 'required' }, responseFormat: { type: 'json_schema', name: 'x', schema: { type: 'object' }, strict: undefined, description: undefined } }), modelOf()),
      converseRequest(
        ask({
          messages: [
            user('Q'),
            { role: 'assistant', content: [{ type: 'reasoning', text: '', redactedData: REDACTED }, { type: 'reasoning', text: 'Think.', signature: SIGNATURE }, { type: 'tool_call', id: TOOL_IDS[0], name: 'get_weather', arguments: '{}' }] },
            { role: 'tool', content: [{ type: 'tool_result', toolCallId: TOOL_IDS[0], name: 'get_weather', content: [{ type: 'text', text: 'no', cacheBreakpoint: true }], isError: true }] },
          ],
          tools,
          reasoning: { effort: 'medium' },
          maxOutputTokens: 16000,
        }),
        modelOf(),
      ),
    ];
    for (const body of bodies) assert.deepStrictEqual((await throughSdk(body)).sent, body);
  });

  test('every recorded whole answer reads as recorded', async () => {
    for (const file of readdirSync(join(FIXTURES, 'responses')).filter((name) => name.startsWith('generate-'))) {
      const answer = fixture(`responses/${file}`);
      assert.deepStrictEqual((await throughSdk(fixture('requests/text.json'), answer)).read, answer, file);
    }
  });

  test('every recorded stream, framed as AWS frames it, reads as recorded (the padding aside)', async () => {
    for (const file of readdirSync(join(FIXTURES, 'responses')).filter((name) => name.startsWith('stream-'))) {
      const events = fixture<ConverseStreamEvent[]>(`responses/${file}`);
      const frames = events.map(({ eventType, payload }) => Buffer.from(eventFrame(eventType, payload)));
      const { client } = clientAnswering('application/vnd.amazon.eventstream', frames);
      const answer = await client.send(new ConverseStreamCommand({ modelId: CLAUDE, messages: [{ role: 'user', content: [{ text: 'Hi' }] }] }));
      const read: Json[] = [];
      for await (const event of answer.stream ?? []) read.push(asWire(event));
      client.destroy();
      const expected = events.map(({ eventType, payload }) => {
        const { p: _padding, ...fields } = payload;
        return { [eventType]: fields };
      });
      assert.deepStrictEqual(read, expected, file);
    }
  });
});
