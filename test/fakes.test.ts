// postgres-pass: skip (the fake upstreams against the SDKs, no gateway and no store)
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { ApiError, GoogleGenAI, type Content, type GenerateContentResponse, type Part } from '@google/genai';
import OpenAI from 'openai';
import { TINY_GIF_BASE64, TINY_PNG_BASE64 } from './fakes/chat-model.js';
import { startFakeAnthropic } from './fakes/fake-anthropic.js';
import { startFakeGemini } from './fakes/fake-gemini.js';
import { startFakeOpenAI } from './fakes/fake-openai-upstream.js';
import type { FakeUpstream } from './fakes/fake-server.js';

/**
 * The fakes speak their providers' wire formats: each is driven directly (no Sluice) by that
 * provider's official SDK. A shared conformance suite checks the deterministic model rules of
 * chat-model.ts the same way on all three; then each provider's own wire details and checks.
 */

let openaiFake: FakeUpstream;
let anthropicFake: FakeUpstream;
let geminiFake: FakeUpstream;
let openai: OpenAI;
let anthropic: Anthropic;
let gemini: GoogleGenAI;

before(async () => {
  openaiFake = await startFakeOpenAI({ apiKey: 'oa-key' });
  anthropicFake = await startFakeAnthropic({ apiKey: 'an-key' });
  geminiFake = await startFakeGemini({ apiKey: 'ge-key' });
  openai = new OpenAI({ apiKey: 'oa-key', baseURL: openaiFake.url, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: 'an-key', baseURL: anthropicFake.url.replace(/\/v1$/, ''), maxRetries: 0 });
  gemini = new GoogleGenAI({ apiKey: 'ge-key', httpOptions: { baseUrl: geminiFake.url.replace(/\/v1beta$/, '') } });
});

after(async () => {
  await Promise.all([openaiFake.close(), anthropicFake.close(), geminiFake.close()]);
});

beforeEach(() => {
  for (const fake of [openaiFake, anthropicFake, geminiFake]) fake.requests.length = 0;
});

const CITY = { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] };
const ZONE = { type: 'object' as const, properties: { zone: { type: 'string' } }, required: ['zone'] };
/** Two tools; get_time comes first, so a forced call without "weather" picks it. */
const TOOLS = [
  { name: 'get_time', description: 'Current time in a zone', schema: ZONE },
  { name: 'get_weather', description: 'Weather in a city', schema: CITY },
];
const PERSON = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    age: { type: 'integer' },
    score: { type: 'number' },
    admin: { type: 'boolean' },
    role: { type: 'string', enum: ['owner', 'guest'] },
    tags: { type: 'array', items: { type: 'string' } },
    address: { type: 'object', properties: { street: { type: 'string' } }, required: ['street'], additionalProperties: false },
    nickname: { type: 'string' },
  },
  required: ['name', 'age', 'score', 'admin', 'role', 'tags', 'address'],
  additionalProperties: false,
} as const;
const PERSON_INSTANCE = { name: 'example', age: 1, score: 1, admin: true, role: 'owner', tags: ['example'], address: { street: 'example' } };
const FULL = ' The quick brown fox jumps over the lazy dog.';

type Choice = 'auto' | 'required' | 'none' | { name: string };

interface Ask {
  readonly prompt: string;
  readonly tools?: boolean;
  readonly choice?: Choice;
  readonly parallel?: boolean;
  readonly json?: boolean;
  readonly image?: boolean;
  readonly reasoning?: boolean;
  readonly stream: boolean;
}

/** One model turn, read back from the SDK's objects. */
interface Turn {
  readonly text: string;
  readonly reasoning: string;
  readonly calls: { name: string; args: unknown }[];
  readonly finish: string;
  /** What the next request replays as the assistant / model turn. */
  readonly replay: unknown;
}

interface Adapter {
  readonly name: string;
  readonly finishes: { readonly stop: string; readonly tools: string; readonly named: string };
  readonly parallelSwitch: boolean;
  ask(ask: Ask): Promise<Turn>;
  /** Sends the results of `turn`'s calls (in order) back and returns the answer. */
  answerCalls(ask: Ask, turn: Turn, results: string[]): Promise<Turn>;
}

// ---------------------------------------------------------------- OpenAI-compatible adapter

function openaiBody(ask: Ask, history: OpenAI.Chat.ChatCompletionMessageParam[] = []): OpenAI.Chat.ChatCompletionCreateParamsNonStreaming {
  const content: OpenAI.Chat.ChatCompletionContentPart[] | string = ask.image
    ? [{ type: 'text', text: ask.prompt }, { type: 'image_url', image_url: { url: `data:image/png;base64,${TINY_PNG_BASE64}` } }]
    : ask.prompt;
  const choice = ask.choice === undefined ? undefined : typeof ask.choice === 'string' ? ask.choice : { type: 'function' as const, function: { name: ask.choice.name } };
  return {
    model: 'upstream-model',
    max_tokens: 64,
    messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content }, ...history],
    ...(ask.tools ? { tools: TOOLS.map((t) => ({ type: 'function' as const, function: { name: t.name, description: t.description, parameters: t.schema } })) } : {}),
    ...(choice === undefined ? {} : { tool_choice: choice }),
    ...(ask.parallel === false ? { parallel_tool_calls: false } : {}),
    ...(ask.json ? { response_format: { type: 'json_schema' as const, json_schema: { name: 'person', schema: PERSON, strict: true } } } : {}),
    ...(ask.reasoning ? { reasoning_effort: 'low' as const } : {}),
  };
}

async function openaiTurn(body: OpenAI.Chat.ChatCompletionCreateParamsNonStreaming, stream: boolean): Promise<Turn> {
  if (!stream) {
    const completion = await openai.chat.completions.create(body);
    const choice = completion.choices[0]!;
    const calls = (choice.message.tool_calls ?? []).map((c) => (c.type === 'function' ? { name: c.function.name, args: JSON.parse(c.function.arguments) } : { name: '?', args: null }));
    return { text: choice.message.content ?? '', reasoning: (choice.message as any).reasoning_content ?? '', calls, finish: choice.finish_reason, replay: choice.message };
  }
  let text = '';
  let reasoning = '';
  let finish = '';
  const calls: { id: string; name: string; arguments: string }[] = [];
  for await (const chunk of await openai.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } })) {
    for (const choice of chunk.choices) {
      text += choice.delta.content ?? '';
      reasoning += (choice.delta as any).reasoning_content ?? '';
      for (const call of choice.delta.tool_calls ?? []) {
        if (call.id !== undefined) calls[call.index] = { id: call.id, name: call.function!.name!, arguments: '' };
        calls[call.index]!.arguments += call.function?.arguments ?? '';
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  const replay = { role: 'assistant', content: calls.length ? null : text, ...(calls.length ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) } : {}) };
  return { text, reasoning, calls: calls.map((c) => ({ name: c.name, args: JSON.parse(c.arguments) })), finish, replay };
}

const OPENAI: Adapter = {
  name: 'OpenAI-compatible (openai SDK)',
  finishes: { stop: 'stop', tools: 'tool_calls', named: 'stop' },
  parallelSwitch: true,
  ask: (ask) => openaiTurn(openaiBody(ask), ask.stream),
  answerCalls: (ask, turn, results) => {
    const message = turn.replay as OpenAI.Chat.ChatCompletionAssistantMessageParam;
    const answers = (message.tool_calls ?? []).map((c, i): OpenAI.Chat.ChatCompletionToolMessageParam => ({ role: 'tool', tool_call_id: c.id, content: results[i]! }));
    return openaiTurn(openaiBody(ask, [message, ...answers]), ask.stream);
  },
};

// ---------------------------------------------------------------- Anthropic adapter

function anthropicBody(ask: Ask, history: Anthropic.MessageParam[] = []): Anthropic.MessageCreateParamsNonStreaming {
  const content: Anthropic.ContentBlockParam[] | string = ask.image
    ? [{ type: 'text', text: ask.prompt }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: TINY_PNG_BASE64 } }]
    : ask.prompt;
  const choice: Anthropic.ToolChoice | undefined =
    ask.choice === undefined && ask.parallel === undefined
      ? undefined
      : typeof ask.choice === 'object'
        ? { type: 'tool', name: ask.choice.name }
        : ask.choice === 'required'
          ? { type: 'any' }
          : ask.choice === 'none'
            ? { type: 'none' }
            : { type: 'auto', ...(ask.parallel === false ? { disable_parallel_tool_use: true } : {}) };
  return {
    model: 'claude-test',
    max_tokens: ask.reasoning ? 2048 : 64,
    system: 'Be brief.',
    messages: [{ role: 'user', content }, ...history],
    ...(ask.tools ? { tools: TOOLS.map((t) => ({ name: t.name, description: t.description, input_schema: t.schema })) } : {}),
    ...(choice === undefined ? {} : { tool_choice: choice }),
    ...(ask.json ? { output_config: { format: { type: 'json_schema' as const, schema: PERSON } } } : {}),
    ...(ask.reasoning ? { thinking: { type: 'enabled' as const, budget_tokens: 1024 } } : {}),
  };
}

async function anthropicTurn(body: Anthropic.MessageCreateParamsNonStreaming, stream: boolean): Promise<Turn> {
  const message = stream ? await anthropic.messages.stream(body).finalMessage() : await anthropic.messages.create(body);
  const text = message.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
  const reasoning = message.content.flatMap((b) => (b.type === 'thinking' ? [b.thinking] : [])).join('');
  const calls = message.content.flatMap((b) => (b.type === 'tool_use' ? [{ name: b.name, args: b.input }] : []));
  return { text, reasoning, calls, finish: message.stop_reason ?? '', replay: message };
}

const ANTHROPIC: Adapter = {
  name: 'Anthropic Messages (@anthropic-ai/sdk)',
  finishes: { stop: 'end_turn', tools: 'tool_use', named: 'tool_use' },
  parallelSwitch: true,
  ask: (ask) => anthropicTurn(anthropicBody(ask), ask.stream),
  answerCalls: (ask, turn, results) => {
    const message = turn.replay as Anthropic.Message;
    const uses = message.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
    return anthropicTurn(
      anthropicBody(ask, [
        { role: 'assistant', content: message.content as Anthropic.ContentBlockParam[] },
        { role: 'user', content: uses.map((u, i) => ({ type: 'tool_result' as const, tool_use_id: u.id, content: results[i]! })) },
      ]),
      ask.stream,
    );
  },
};

// ---------------------------------------------------------------- Gemini adapter

function geminiRequest(ask: Ask, history: Content[] = []) {
  const parts: Part[] = [{ text: ask.prompt }, ...(ask.image ? [{ inlineData: { mimeType: 'image/png', data: TINY_PNG_BASE64 } }] : [])];
  const mode = ask.choice === undefined ? undefined : typeof ask.choice === 'object' ? 'ANY' : ask.choice === 'required' ? 'ANY' : ask.choice === 'none' ? 'NONE' : 'AUTO';
  return {
    model: 'gemini-test',
    contents: [{ role: 'user', parts }, ...history],
    config: {
      systemInstruction: 'Be brief.',
      maxOutputTokens: 64,
      ...(ask.tools ? { tools: [{ functionDeclarations: TOOLS.map((t) => ({ name: t.name, description: t.description, parametersJsonSchema: t.schema })) }] } : {}),
      ...(mode === undefined ? {} : { toolConfig: { functionCallingConfig: { mode: mode as any, ...(typeof ask.choice === 'object' ? { allowedFunctionNames: [ask.choice.name] } : {}) } } }),
      ...(ask.json ? { responseMimeType: 'application/json', responseJsonSchema: PERSON } : {}),
      ...(ask.reasoning ? { thinkingConfig: { includeThoughts: true, thinkingBudget: 1024 } } : {}),
    },
  };
}

async function geminiTurn(request: ReturnType<typeof geminiRequest>, stream: boolean): Promise<Turn> {
  const parts: Part[] = [];
  let finish = '';
  const responses: GenerateContentResponse[] = stream ? [] : [await gemini.models.generateContent(request)];
  if (stream) for await (const chunk of await gemini.models.generateContentStream(request)) responses.push(chunk);
  for (const response of responses) {
    const candidate = response.candidates?.[0];
    parts.push(...(candidate?.content?.parts ?? []));
    if (candidate?.finishReason) finish = candidate.finishReason;
  }
  return {
    text: parts.filter((p) => p.text !== undefined && !p.thought).map((p) => p.text).join(''),
    reasoning: parts.filter((p) => p.thought).map((p) => p.text).join(''),
    calls: parts.flatMap((p) => (p.functionCall ? [{ name: p.functionCall.name!, args: p.functionCall.args }] : [])),
    finish,
    replay: { role: 'model', parts: parts.filter((p) => !p.thought) },
  };
}

const GEMINI: Adapter = {
  name: 'Gemini generateContent (@google/genai)',
  finishes: { stop: 'STOP', tools: 'STOP', named: 'STOP' },
  parallelSwitch: false,
  ask: (ask) => geminiTurn(geminiRequest(ask), ask.stream),
  answerCalls: (ask, turn, results) => {
    const model = turn.replay as Content;
    const calls = model.parts!.filter((p) => p.functionCall);
    const answers: Content = { role: 'user', parts: calls.map((p, i) => ({ functionResponse: { name: p.functionCall!.name!, response: { result: results[i]! } } })) };
    return geminiTurn(geminiRequest(ask, [model, answers]), ask.stream);
  },
};

// ---------------------------------------------------------------- the shared rules

for (const adapter of [OPENAI, ANTHROPIC, GEMINI]) {
  for (const stream of [false, true]) {
    describe(`model rules: ${adapter.name}${stream ? ', streamed' : ''}`, () => {
      test('a plain prompt is answered "[prompt]" and the words', async () => {
        const turn = await adapter.ask({ prompt: 'hi there', stream });
        assert.equal(turn.text, `[hi there]${FULL}`);
        assert.deepEqual(turn.calls, []);
        assert.equal(turn.finish, adapter.finishes.stop);
      });

      test('"weather" calls get_weather for Paris; "Paris and Tokyo" makes two calls unless parallel calls are off', async () => {
        const one = await adapter.ask({ prompt: 'What is the weather like?', tools: true, stream });
        assert.deepEqual(one.calls, [{ name: 'get_weather', args: { city: 'Paris' } }]);
        assert.equal(one.text, '');
        assert.equal(one.finish, adapter.finishes.tools);
        const two = await adapter.ask({ prompt: 'weather in Paris and Tokyo?', tools: true, stream });
        assert.deepEqual(two.calls, [{ name: 'get_weather', args: { city: 'Paris' } }, { name: 'get_weather', args: { city: 'Tokyo' } }]);
        if (adapter.parallelSwitch) {
          const serial = await adapter.ask({ prompt: 'weather in Paris and Tokyo?', tools: true, parallel: false, stream });
          assert.deepEqual(serial.calls, [{ name: 'get_weather', args: { city: 'Paris' } }]);
        }
        const untouched = await adapter.ask({ prompt: 'hello', tools: true, stream });
        assert.deepEqual(untouched.calls, []);
        assert.equal(untouched.text, `[hello]${FULL}`);
      });

      test('tool choice: required calls the first tool, a named choice that tool, none forbids calls', async () => {
        const required = await adapter.ask({ prompt: 'hello', tools: true, choice: 'required', stream });
        assert.deepEqual(required.calls, [{ name: 'get_time', args: { zone: 'example' } }]);
        assert.equal(required.finish, adapter.finishes.tools);
        const named = await adapter.ask({ prompt: 'weather in Paris and Tokyo?', tools: true, choice: { name: 'get_time' }, stream });
        assert.deepEqual(named.calls, [{ name: 'get_time', args: { zone: 'example' } }]);
        assert.equal(named.finish, adapter.finishes.named);
        const none = await adapter.ask({ prompt: 'weather?', tools: true, choice: 'none', stream });
        assert.deepEqual(none.calls, []);
        assert.equal(none.text, `[weather?]${FULL}`);
      });

      test('after tool results the answer quotes each result', async () => {
        const ask = { prompt: 'weather in Paris and Tokyo?', tools: true, stream };
        const asked = await adapter.ask(ask);
        const answered = await adapter.answerCalls(ask, asked, ['Sunny', 'Rain']);
        assert.equal(answered.text, 'Result: Sunny Result: Rain');
        assert.deepEqual(answered.calls, []);
        assert.equal(answered.finish, adapter.finishes.stop);
      });

      test('JSON output is the minimal instance of the schema', async () => {
        const turn = await adapter.ask({ prompt: 'Describe a person as json', json: true, stream });
        assert.deepEqual(JSON.parse(turn.text), PERSON_INSTANCE);
      });

      test('an image is counted in the answer', async () => {
        const turn = await adapter.ask({ prompt: 'what is this?', image: true, stream });
        assert.equal(turn.text, `[what is this?] I see 1 image(s).${FULL}`);
      });

      test('asked to reason, the model thinks "Let me think." first', async () => {
        const turn = await adapter.ask({ prompt: 'why?', reasoning: true, stream });
        assert.equal(turn.reasoning, 'Let me think.');
        assert.equal(turn.text, `[why?]${FULL}`);
      });
    });
  }
}

// ---------------------------------------------------------------- OpenAI-compatible specifics

describe('OpenAI-compatible fake: wire details', () => {
  const tools = TOOLS.map((t) => ({ type: 'function' as const, function: { name: t.name, parameters: t.schema } }));

  test('a plain completion: text, finish_reason length, usage; n choices', async () => {
    const completion = await openai.chat.completions.create({ model: 'upstream-model', messages: [{ role: 'user', content: 'hello' }], max_tokens: 3, n: 2 });
    assert.equal(completion.object, 'chat.completion');
    assert.deepEqual(
      completion.choices.map((c) => [c.index, c.message.content, c.finish_reason]),
      [
        [0, '[hello] The quick', 'length'],
        [1, '[hello] The quick', 'length'],
      ],
    );
    assert.deepEqual(completion.usage, { prompt_tokens: 1, total_tokens: 7, completion_tokens: 6 });
  });

  test('streamed tool calls: index, id and name first with empty arguments, then fragments; the usage chunk has no choices', async () => {
    const chunks = [];
    for await (const chunk of await openai.chat.completions.create({ model: 'upstream-model', messages: [{ role: 'user', content: 'weather in Paris and Tokyo?' }], tools, stream: true, stream_options: { include_usage: true } })) {
      chunks.push(chunk);
    }
    const deltas = chunks.flatMap((c) => c.choices.flatMap((choice) => choice.delta.tool_calls ?? []));
    const first = deltas.filter((d) => d.index === 0);
    assert.match(first[0]!.id!, /^chatcmpl-tool-/);
    assert.deepEqual(first[0]!.function, { name: 'get_weather', arguments: '' });
    assert.equal(first[0]!.type, 'function');
    const fragments = first.slice(1).map((d) => d.function!.arguments!);
    assert.ok(fragments.length >= 2, `arguments arrive in pieces (${fragments.length})`);
    assert.ok(first.slice(1).every((d) => d.id === undefined && d.function!.name === undefined));
    assert.equal(fragments.join(''), '{"city":"Paris"}');
    assert.equal(JSON.parse(deltas.filter((d) => d.index === 1).map((d) => d.function?.arguments ?? '').join('')).city, 'Tokyo');
    const last = chunks.at(-1)!;
    assert.deepEqual(last.choices, []);
    assert.deepEqual(last.usage, { prompt_tokens: 5, total_tokens: 11, completion_tokens: 6 });
    assert.equal(chunks.at(-2)!.choices[0]!.finish_reason, 'tool_calls');
    // The SDK's own accumulator puts the calls together.
    const final = await openai.chat.completions.stream({ model: 'upstream-model', messages: [{ role: 'user', content: 'weather?' }], tools }).finalChatCompletion();
    assert.deepEqual(final.choices[0]!.message.tool_calls!.map((c) => c.type === 'function' && [c.function.name, c.function.arguments]), [['get_weather', '{"city":"Paris"}']]);
  });

  test('reasoning: reasoning_content in the message and in deltas before the content; reasoning tokens in usage', async () => {
    const whole = await openai.chat.completions.create({ model: 'upstream-model', messages: [{ role: 'user', content: 'why?' }], reasoning_effort: 'low', max_tokens: 5 });
    assert.equal((whole.choices[0]!.message as any).reasoning_content, 'Let me think.');
    assert.equal(whole.choices[0]!.message.content, '[why?] The');
    assert.deepEqual(whole.usage!.completion_tokens_details, { reasoning_tokens: 3 });
    assert.equal(whole.usage!.completion_tokens, 5, 'reasoning counts in completion_tokens and against max_tokens');
    const order: string[] = [];
    for await (const chunk of await openai.chat.completions.create({ model: 'upstream-model', messages: [{ role: 'user', content: 'why?' }], reasoning_effort: 'low', stream: true })) {
      const delta = chunk.choices[0]?.delta as any;
      if (delta?.reasoning_content) order.push(`r:${delta.reasoning_content}`);
      if (delta?.content) order.push(`c:${delta.content}`);
    }
    assert.deepEqual(order.slice(0, 4), ['r:Let', 'r: me', 'r: think.', 'c:[why?]']);
  });

  test('the reasoning field can be spelled as newer vLLM does', async () => {
    const fake = await startFakeOpenAI({ reasoningField: 'reasoning' });
    try {
      const client = new OpenAI({ apiKey: 'x', baseURL: fake.url, maxRetries: 0 });
      const completion = await client.chat.completions.create({ model: 'upstream-model', messages: [{ role: 'user', content: 'why?' }], reasoning_effort: 'high' });
      assert.equal((completion.choices[0]!.message as any).reasoning, 'Let me think.');
      assert.equal((completion.choices[0]!.message as any).reasoning_content, undefined);
    } finally {
      await fake.close();
    }
  });

  test('a prompt of more than 20 tokens reports 16 cached tokens, included in prompt_tokens', async () => {
    const long = Array.from({ length: 25 }, (_, i) => `word${i}`).join(' ');
    const completion = await openai.chat.completions.create({ model: 'upstream-model', messages: [{ role: 'user', content: long }], max_tokens: 1 });
    assert.equal(completion.usage!.prompt_tokens, 25);
    assert.deepEqual(completion.usage!.prompt_tokens_details, { cached_tokens: 16 });
  });

  test('json_object answers {"ok":true}; an http image URL counts too', async () => {
    const object = await openai.chat.completions.create({ model: 'upstream-model', messages: [{ role: 'user', content: 'Answer in JSON' }], response_format: { type: 'json_object' } });
    assert.equal(object.choices[0]!.message.content, '{"ok":true}');
    const images = await openai.chat.completions.create({
      model: 'upstream-model',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'compare' }, { type: 'image_url', image_url: { url: 'https://example.com/a.png' } }, { type: 'image_url', image_url: { url: `data:image/gif;base64,${TINY_GIF_BASE64}` } }] }],
    });
    assert.equal(images.choices[0]!.message.content, `[compare] I see 2 image(s).${FULL}`);
  });

  test('the conversation is checked as OpenAI checks it; errors surface as BadRequestError', async () => {
    const call = { id: 'call_1', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };
    const cases: [OpenAI.Chat.ChatCompletionCreateParamsNonStreaming, string, RegExp][] = [
      [{ model: 'upstream-model', messages: [{ role: 'user', content: 'x' }, { role: 'tool', tool_call_id: 'call_1', content: 'Sunny' }] }, 'messages.[1].role', /must be a response to a preceeding message with 'tool_calls'/],
      [{ model: 'upstream-model', tools, messages: [{ role: 'user', content: 'x' }, { role: 'assistant', tool_calls: [call] }, { role: 'tool', tool_call_id: 'call_2', content: 'Sunny' }] }, 'messages.[2].tool_call_id', /'call_2' not found/],
      [{ model: 'upstream-model', tools, messages: [{ role: 'user', content: 'x' }, { role: 'assistant', tool_calls: [call] }, { role: 'user', content: 'and?' }] }, 'messages.[1].role', /did not have response messages: call_1/],
      [{ model: 'upstream-model', tools, messages: [{ role: 'user', content: 'x' }, { role: 'assistant', tool_calls: [{ ...call, function: { name: 'get_weather', arguments: { city: 'Paris' } as any } }] }, { role: 'tool', tool_call_id: 'call_1', content: 'Sunny' }] }, 'messages[1].tool_calls[0].function.arguments', /expected a string/],
      [{ model: 'upstream-model', messages: [{ role: 'user', content: 'x' }], tool_choice: 'required' }, 'tool_choice', /only allowed when 'tools' are specified/],
      [{ model: 'upstream-model', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_object' } }, 'messages', /must contain the word 'json'/],
      [{ model: 'upstream-model', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { schema: PERSON } as any } }, 'response_format.json_schema.name', /Missing required parameter/],
      [{ model: 'upstream-model', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,not base64!' } }] }] }, 'messages[0].content[0].image_url.url', /base64-encoded data URL/],
      [{ model: 'upstream-model', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${Buffer.from('plain text').toString('base64')}` } }] }] }, 'messages[0].content[0].image_url.url', /unsupported image/],
    ];
    for (const [body, param, message] of cases) {
      await assert.rejects(openai.chat.completions.create(body), (e: any) => {
        assert.ok(e instanceof OpenAI.BadRequestError, `${param}: ${e}`);
        assert.equal(e.param, param);
        assert.match(e.message, message);
        return true;
      });
    }
  });
});

// ---------------------------------------------------------------- Anthropic specifics

describe('Anthropic fake: wire details', () => {
  const tools = TOOLS.map((t) => ({ name: t.name, input_schema: t.schema }));

  test('a plain message: text block, stop_reason max_tokens, usage with the cache counters', async () => {
    const message = await anthropic.messages.create({ model: 'claude-test', max_tokens: 3, messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(message.type, 'message');
    assert.deepEqual(message.content, [{ type: 'text', text: '[hello] The quick' }]);
    assert.equal(message.stop_reason, 'max_tokens');
    assert.equal(message.usage.input_tokens, 1);
    assert.equal(message.usage.output_tokens, 3);
    assert.equal(message.usage.cache_read_input_tokens, 0);
    assert.equal(message.usage.cache_creation_input_tokens, 0);
    const sent = anthropicFake.requests[0]!;
    assert.equal(sent.headers.authorization, 'Bearer an-key', 'the current SDK sends the key as a bearer token');
    const stopped = await anthropic.messages.create({ model: 'claude-test', max_tokens: 50, stop_sequences: [' fox'], messages: [{ role: 'user', content: 'hello' }] });
    assert.deepEqual([stopped.stop_reason, stopped.stop_sequence, (stopped.content[0] as Anthropic.TextBlock).text], ['stop_sequence', ' fox', '[hello] The quick brown']);
  });

  test('messages.stream with tools and thinking: thinking_delta, signature_delta, input_json_delta fragments; finalMessage()', async () => {
    const stream = anthropic.messages.stream({ model: 'claude-test', max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 }, tools, messages: [{ role: 'user', content: 'weather in Paris and Tokyo?' }] });
    const events: Anthropic.MessageStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const final = await stream.finalMessage();
    const types = events.map((e) => (e.type === 'content_block_delta' ? e.delta.type : e.type));
    assert.deepEqual(types.slice(0, 7), ['message_start', 'content_block_start', 'thinking_delta', 'thinking_delta', 'thinking_delta', 'signature_delta', 'content_block_stop']);
    assert.deepEqual(types.slice(-2), ['message_delta', 'message_stop']);
    const json = events.filter((e): e is Anthropic.RawContentBlockDeltaEvent => e.type === 'content_block_delta' && e.delta.type === 'input_json_delta' && e.index === 1);
    assert.ok(json.length >= 2, 'the input arrives in pieces');
    assert.equal(json.map((e) => (e.delta as Anthropic.InputJSONDelta).partial_json).join(''), '{"city":"Paris"}');
    const start = events.find((e): e is Anthropic.RawContentBlockStartEvent => e.type === 'content_block_start' && e.index === 1)!;
    assert.deepEqual({ ...start.content_block, id: 'x' }, { type: 'tool_use', id: 'x', name: 'get_weather', input: {} });
    assert.deepEqual(final.content.map((b) => b.type), ['thinking', 'tool_use', 'tool_use']);
    assert.equal((final.content[0] as Anthropic.ThinkingBlock).thinking, 'Let me think.');
    assert.ok((final.content[0] as Anthropic.ThinkingBlock).signature.length > 20);
    assert.deepEqual(final.content.slice(1).map((b) => (b as Anthropic.ToolUseBlock).input), [{ city: 'Paris' }, { city: 'Tokyo' }]);
    assert.match((final.content[1] as Anthropic.ToolUseBlock).id, /^toolu_[a-zA-Z0-9_-]+$/);
    assert.equal(final.stop_reason, 'tool_use');
    assert.equal(final.usage.output_tokens, 9, '3 thinking tokens and 3 per call, cumulative in message_delta');
  });

  test('thinking replayed with its signature continues the tool loop; without it, or altered, is a 400', async () => {
    const ask = { model: 'claude-test', max_tokens: 2048, thinking: { type: 'enabled' as const, budget_tokens: 1024 }, tools };
    const first = await anthropic.messages.create({ ...ask, messages: [{ role: 'user', content: 'weather?' }] });
    const use = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
    const conversation = (assistant: Anthropic.ContentBlockParam[]): Anthropic.MessageParam[] => [
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: assistant },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: [{ type: 'text', text: 'Sunny' }] }] },
    ];
    const answered = await anthropic.messages.create({ ...ask, messages: conversation(first.content as Anthropic.ContentBlockParam[]) });
    assert.deepEqual(answered.content.map((b) => (b.type === 'text' ? b.text : b.type)), ['thinking', 'Result: Sunny']);
    const thinking = first.content[0] as Anthropic.ThinkingBlock;
    const broken: [Anthropic.ContentBlockParam[], RegExp][] = [
      [[use], /Expected `thinking` or `redacted_thinking`, but found `tool_use`/],
      [[{ type: 'thinking', thinking: 'Something else.', signature: thinking.signature }, use], /Invalid `signature` in `thinking` block/],
      [[{ type: 'thinking', thinking: thinking.thinking, signature: '' }, use], /messages\.1\.content\.0\.thinking\.signature: Field required/],
    ];
    for (const [assistant, message] of broken) {
      await assert.rejects(anthropic.messages.create({ ...ask, messages: conversation(assistant) }), (e: any) => e instanceof Anthropic.BadRequestError && message.test(e.message));
    }
  });

  test('prompt caching: a marked prefix is written, then read; input_tokens counts only the rest', async () => {
    const system: Anthropic.TextBlockParam[] = [{ type: 'text', text: 'You answer questions about the weather in short sentences.', cache_control: { type: 'ephemeral' } }];
    const body = { model: 'claude-test', max_tokens: 5, system, messages: [{ role: 'user' as const, content: 'hello there' }] };
    const first = await anthropic.messages.create(body);
    const second = await anthropic.messages.create(body);
    assert.deepEqual([first.usage.input_tokens, first.usage.cache_creation_input_tokens, first.usage.cache_read_input_tokens], [2, 9, 0]);
    assert.deepEqual([second.usage.input_tokens, second.usage.cache_creation_input_tokens, second.usage.cache_read_input_tokens], [2, 0, 9]);
    assert.equal(first.usage.cache_creation?.ephemeral_5m_input_tokens, 9);
  });

  test('structured output needs closed objects; a refusal is stop_reason refusal', async () => {
    await assert.rejects(
      anthropic.messages.create({ model: 'claude-test', max_tokens: 50, messages: [{ role: 'user', content: 'x' }], output_config: { format: { type: 'json_schema', schema: { type: 'object', properties: { a: { type: 'string' } } } } } }),
      (e: any) => e instanceof Anthropic.BadRequestError && /additionalProperties' must be explicitly set to false/.test(e.message),
    );
    const refused = await anthropic.messages.create({ model: 'claude-test', max_tokens: 50, messages: [{ role: 'user', content: 'please refuse' }] });
    assert.equal(refused.stop_reason, 'refusal');
    assert.equal(refused.stop_details?.type, 'refusal');
  });

  test('the conversation is checked as the Messages API checks it; errors surface as BadRequestError', async () => {
    const use: Anthropic.ToolUseBlockParam = { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } };
    const result: Anthropic.ToolResultBlockParam = { type: 'tool_result', tool_use_id: 'toolu_1', content: 'Sunny' };
    const base = { model: 'claude-test', max_tokens: 50, tools };
    const cases: [Anthropic.MessageCreateParamsNonStreaming, RegExp][] = [
      [{ ...base, messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: [use] }, { role: 'user', content: 'and?' }] }, /messages\.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1/],
      [{ ...base, messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: [use] }, { role: 'user', content: [{ type: 'text', text: 'here:' }, result] }] }, /messages\.2: Did not find 1 `tool_result` block\(s\) at the beginning/],
      [{ ...base, messages: [{ role: 'user', content: [result] }] }, /unexpected `tool_use_id` found in `tool_result` blocks: toolu_1/],
      [{ ...base, messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: [{ ...use, id: 'call.1' }] }, { role: 'user', content: [{ ...result, tool_use_id: 'call.1' }] }] }, /tool_use\.id: String should match pattern/],
      [{ ...base, messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: [{ ...use, input: '{"city":"Paris"}' }] }, { role: 'user', content: [result] }] }, /tool_use\.input: Input should be a valid dictionary/],
      [{ model: 'claude-test', max_tokens: 50, messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: [use] }, { role: 'user', content: [result] }] }, /must define tools/],
      [{ model: 'claude-test', max_tokens: 50, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'x' }] }, /messages\.0\.role/],
      [{ model: 'claude-test', max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 512 }, messages: [{ role: 'user', content: 'x' }] }, /budget_tokens: Input should be greater than or equal to 1024/],
      [{ model: 'claude-test', max_tokens: 1024, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'x' }] }, /`max_tokens` must be greater than `thinking.budget_tokens`/],
      [{ ...base, max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 }, tool_choice: { type: 'any' }, messages: [{ role: 'user', content: 'x' }] }, /Thinking may not be enabled when tool_choice forces tool use/],
      [{ model: 'claude-test', max_tokens: 50, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: TINY_PNG_BASE64 } }] }] }, /specified using the image\/jpeg media type, but the image appears to be a image\/png image/],
      [{ model: 'claude-test', max_tokens: 50, messages: [{ role: 'user', content: [{ type: 'text', text: '' }] }] }, /text content blocks must be non-empty/],
      [{ model: 'claude-test', max_tokens: 50, temperature: 0.5, messages: [{ role: 'user', content: 'x' }] } as any, /temperature: this parameter is not supported in API version 2026-10-21/],
    ];
    for (const [body, message] of cases) {
      await assert.rejects(anthropic.messages.create(body), (e: any) => {
        assert.ok(e instanceof Anthropic.BadRequestError, `${message}: ${e}`);
        assert.match(e.message, message);
        return true;
      });
    }
    // Consecutive turns of one role are combined, as documented (an option refuses them instead).
    const merged = await anthropic.messages.create({ model: 'claude-test', max_tokens: 50, messages: [{ role: 'user', content: 'first' }, { role: 'user', content: 'second' }] });
    assert.equal((merged.content[0] as Anthropic.TextBlock).text, `[first second]${FULL}`);
    const strict = await startFakeAnthropic({ apiKey: 'an-key', consecutiveTurns: 'reject' });
    try {
      const client = new Anthropic({ apiKey: 'an-key', baseURL: strict.url.replace(/\/v1$/, ''), maxRetries: 0 });
      await assert.rejects(
        client.messages.create({ model: 'claude-test', max_tokens: 50, messages: [{ role: 'user', content: 'first' }, { role: 'user', content: 'second' }] }),
        (e: any) => e instanceof Anthropic.BadRequestError && /roles must alternate/.test(e.message),
      );
    } finally {
      await strict.close();
    }
  });

  test('API version 2023-06-01 with x-api-key still takes the sampling parameters', async () => {
    const response = await fetch(`${anthropicFake.url}/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'an-key', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-test', max_tokens: 4, temperature: 0.5, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(response.status, 200);
    assert.equal(((await response.json()) as any).content[0].text, '[hi] The quick brown');
  });
});

// ---------------------------------------------------------------- Gemini specifics

describe('Gemini fake: wire details', () => {
  const declarations = [{ functionDeclarations: TOOLS.map((t) => ({ name: t.name, parameters: { type: 'OBJECT', properties: Object.fromEntries(Object.keys(t.schema.properties).map((k) => [k, { type: 'STRING' }])), required: [...t.schema.required] } })) }] as any;

  test('a plain answer: finishReason MAX_TOKENS, usageMetadata; candidateCount', async () => {
    const response = await gemini.models.generateContent({ model: 'gemini-test', contents: 'hello', config: { maxOutputTokens: 3, candidateCount: 2 } });
    assert.deepEqual(
      response.candidates!.map((c) => [c.index ?? 0, c.content!.parts![0]!.text, c.finishReason]),
      [
        [0, '[hello] The quick', 'MAX_TOKENS'],
        [1, '[hello] The quick', 'MAX_TOKENS'],
      ],
    );
    assert.deepEqual({ ...response.usageMetadata }, { promptTokenCount: 1, candidatesTokenCount: 6, totalTokenCount: 7 });
  });

  test('function calls (OpenAPI parameters): no id, finishReason STOP; streamed whole, with thoughts and a signature', async () => {
    const response = await gemini.models.generateContent({ model: 'gemini-test', contents: 'weather in Paris and Tokyo?', config: { tools: declarations } });
    assert.deepEqual(response.functionCalls, [
      { name: 'get_weather', args: { city: 'Paris' } },
      { name: 'get_weather', args: { city: 'Tokyo' } },
    ]);
    assert.equal(response.candidates![0]!.finishReason, 'STOP');
    const chunks: GenerateContentResponse[] = [];
    for await (const chunk of await gemini.models.generateContentStream({ model: 'gemini-test', contents: 'weather in Paris and Tokyo?', config: { tools: declarations, thinkingConfig: { includeThoughts: true } } })) {
      chunks.push(chunk);
    }
    const parts = chunks.map((c) => c.candidates![0]!.content!.parts!);
    assert.deepEqual(parts.slice(0, 3).map((p) => [p[0]!.text, p[0]!.thought]), [['Let', true], [' me', true], [' think.', true]]);
    assert.deepEqual(parts.slice(3).map((p) => p[0]!.functionCall), [{ name: 'get_weather', args: { city: 'Paris' } }, { name: 'get_weather', args: { city: 'Tokyo' } }]);
    assert.ok(parts[3]![0]!.thoughtSignature, 'the first call carries the signature');
    assert.equal(parts[4]![0]!.thoughtSignature, undefined);
    assert.deepEqual({ ...chunks.at(-1)!.usageMetadata }, { promptTokenCount: 5, candidatesTokenCount: 6, totalTokenCount: 14, thoughtsTokenCount: 3 });
    assert.equal(chunks.at(-1)!.candidates![0]!.finishReason, 'STOP');
  });

  test('thoughts not included still count; the text part carries the signature', async () => {
    const response = await gemini.models.generateContent({ model: 'gemini-test', contents: 'why?', config: { maxOutputTokens: 5, thinkingConfig: { thinkingBudget: 1024 } } });
    const parts = response.candidates![0]!.content!.parts!;
    assert.equal(parts.length, 1);
    assert.equal(parts[0]!.text, '[why?] The');
    assert.ok(parts[0]!.thoughtSignature);
    assert.equal(response.usageMetadata!.thoughtsTokenCount, 3);
    assert.equal(response.usageMetadata!.candidatesTokenCount, 2, 'thoughts count against maxOutputTokens');
  });

  test('responseSchema (OpenAPI subset), ANY with allowedFunctionNames, implicit caching', async () => {
    const json = await gemini.models.generateContent({
      model: 'gemini-test',
      contents: 'a person',
      config: { responseMimeType: 'application/json', responseSchema: { type: 'OBJECT', properties: { name: { type: 'STRING' }, tags: { type: 'ARRAY', items: { type: 'INTEGER' } } }, required: ['name', 'tags'] } as any },
    });
    assert.deepEqual(JSON.parse(json.text!), { name: 'example', tags: [1] });
    const forced = await gemini.models.generateContent({ model: 'gemini-test', contents: 'hello', config: { tools: declarations, toolConfig: { functionCallingConfig: { mode: 'ANY' as any, allowedFunctionNames: ['get_weather'] } } } });
    assert.deepEqual(forced.functionCalls, [{ name: 'get_weather', args: { city: 'example' } }]);
    const long = Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ');
    const cached = await gemini.models.generateContent({ model: 'gemini-test', contents: long, config: { maxOutputTokens: 1 } });
    assert.equal(cached.usageMetadata!.cachedContentTokenCount, 16);
    assert.equal(cached.usageMetadata!.promptTokenCount, 30, 'promptTokenCount includes the cached tokens');
  });

  test('the conversation is checked as Gemini checks it; errors surface as ApiError 400', async () => {
    const call: Content = { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] };
    const response = (name: string, value: unknown = { result: 'Sunny' }): Content => ({ role: 'user', parts: [{ functionResponse: { name, response: value as any } }] });
    const cases: [Content[], RegExp][] = [
      [[{ role: 'user', parts: [{ text: 'x' }] }, response('get_weather')], /function response turn comes immediately after a function call turn/],
      [[{ role: 'user', parts: [{ text: 'x' }] }, call, response('get_time')], /get_time was not called/],
      [[{ role: 'user', parts: [{ text: 'x' }] }, call, { role: 'user', parts: [{ functionResponse: { response: { result: 'Sunny' } } }] }], /function_response\.name: Name cannot be empty/],
      [[call, response('get_weather')], /function call turn comes immediately after a user turn or after a function response turn/],
      [[{ role: 'user', parts: [{ text: 'x' }] }, call, { role: 'user', parts: [...response('get_weather').parts!, ...response('get_weather').parts!] }], /number of function response parts is equal to the number of function call parts/],
      [[{ role: 'assistant', parts: [{ text: 'x' }] }], /Please use a valid role: user, model/],
    ];
    for (const [contents, message] of cases) {
      await assert.rejects(gemini.models.generateContent({ model: 'gemini-test', contents, config: { tools: declarations } }), (e: any) => {
        assert.ok(e instanceof ApiError, `${message}: ${e}`);
        assert.equal(e.status, 400);
        assert.match(e.message, message);
        return true;
      });
    }
  });

  test('parameters refuse JSON Schema keys the OpenAPI subset lacks; parametersJsonSchema takes them', async () => {
    // The SDK rewrites `parameters` itself, so these go as the raw requests a gateway would send.
    const send = async (declaration: object) => {
      const response = await fetch(`${geminiFake.url}/models/gemini-test:generateContent`, {
        method: 'POST',
        headers: { 'x-goog-api-key': 'ge-key', 'content-type': 'application/json' },
        body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'weather?' }] }], tools: [{ functionDeclarations: [{ name: 'get_weather', ...declaration }] }] }),
      });
      return { status: response.status, body: (await response.json()) as any };
    };
    const jsonSchema = { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };
    const refused = await send({ parameters: jsonSchema });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.status, 'INVALID_ARGUMENT');
    assert.equal(refused.body.error.message, `Invalid JSON payload received. Unknown name "$schema" at 'tools[0].function_declarations[0].parameters': Cannot find field.`);
    const { $schema: _ignored, ...open } = jsonSchema;
    assert.match((await send({ parameters: open })).body.error.message, /Unknown name "additionalProperties" at 'tools\[0\]\.function_declarations\[0\]\.parameters'/);
    assert.match((await send({ parameters: { type: 'object', properties: {} } })).body.error.message, /parameters\.properties: should be non-empty for OBJECT type/);
    const accepted = await send({ parametersJsonSchema: jsonSchema });
    assert.equal(accepted.status, 200);
    assert.deepEqual(accepted.body.candidates[0].content.parts, [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }]);
  });
});
