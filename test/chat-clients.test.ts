// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row, both run on PostgreSQL by usage, limits, ledger-durability and the console files)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createOpenAI } from '@ai-sdk/openai';
import { tool as langchainTool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { generateObject, generateText, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';
import { PDF_BASE64 } from './support/documents.js';
import { createKey, startSluice, type RunningSluice } from './support/sluice.js';

/**
 * Real chat clients pointed at Sluice, each against an OpenAI-compatible, an Anthropic and a Gemini
 * upstream. The fakes answer deterministically (see test/fakes): a user turn that mentions
 * "weather" gets a call of `get_weather` with {"city":"Paris"} (two parallel calls for "weather in
 * Paris and Tokyo"); a turn of tool results gets a text quoting them; a JSON Schema gets a minimal
 * instance of it.
 */
let sluice: RunningSluice;
let key: string;

const MODELS = [
  { name: 'OpenAI-compatible', model: 'llama-chat' },
  { name: 'Anthropic', model: 'claude' },
  { name: 'Gemini', model: 'gemini-flash' },
];

let upstreams: ThreeUpstreams;

before(async () => {
  upstreams = await startThreeUpstreams();
  sluice = await startSluice({
    config: `${upstreams.providersYaml}
models:
  - { id: claude, provider: anthropic, upstream_model: claude-test, endpoints: [chat], max_output_tokens: 2048 }
  - { id: gemini-flash, provider: google, upstream_model: gemini-test, endpoints: [chat] }
  - { id: llama-chat, provider: vllm, upstream_model: upstream-model, endpoints: [chat] }
`,
  });
  key = (await createKey(sluice.dataDir, 'acme')).key;
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
  await upstreams.close();
});

const weatherParameters: Record<string, unknown> = {
  type: 'object',
  properties: { city: { type: 'string', description: 'The city' } },
  required: ['city'],
  additionalProperties: false,
};

for (const { name, model } of MODELS) {
  describe(`the openai SDK, chat on ${name}`, () => {
    const client = () => new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 });

    test('a PDF as a file part reaches the upstream as its own document', async () => {
      const completion = await client().chat.completions.create({
        model,
        messages: [{ role: 'user', content: [{ type: 'file', file: { filename: 'report.pdf', file_data: `data:application/pdf;base64,${PDF_BASE64}` } }, { type: 'text', text: 'Summarise the report.' }] }],
      });
      assert.match(completion.choices[0]!.message.content ?? '', /^\[Summarise the report\.\]/);
      const fake = model === 'claude' ? upstreams.anthropic : model === 'gemini-flash' ? upstreams.gemini : upstreams.vllm;
      const sent = fake.requests.at(-1)!.body;
      if (fake === upstreams.anthropic) assert.deepEqual(sent.messages[0].content[0], { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF_BASE64 }, title: 'report.pdf' });
      else if (fake === upstreams.gemini) assert.deepEqual(sent.contents[0].parts[0], { inlineData: { mimeType: 'application/pdf', data: PDF_BASE64 } });
      else assert.deepEqual(sent.messages[0].content[0], { type: 'file', file: { filename: 'report.pdf', file_data: `data:application/pdf;base64,${PDF_BASE64}` } });
    });

    test('tools over several turns: a call, its result sent back, an answer that uses it', async () => {
      const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'get_weather', description: 'Weather in a city', parameters: weatherParameters } }];
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
      const first = await client().chat.completions.create({ model, messages, tools });
      const choice = first.choices[0]!;
      assert.equal(choice.finish_reason, 'tool_calls');
      const calls = choice.message.tool_calls!;
      assert.equal(calls.length, 1);
      const call = calls[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
      assert.equal(call.function.name, 'get_weather');
      assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
      assert.ok(call.id.length > 0);
      messages.push(choice.message, { role: 'tool', tool_call_id: call.id, content: '22 degrees and sunny' });
      const second = await client().chat.completions.create({ model, messages, tools });
      assert.equal(second.choices[0]!.finish_reason, 'stop');
      assert.match(second.choices[0]!.message.content ?? '', /22 degrees and sunny/);
    });

    test('streamed parallel tool calls: each with its own index, id and name first, arguments in fragments', async () => {
      const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'get_weather', parameters: weatherParameters } }];
      const stream = await client().chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'What is the weather in Paris and Tokyo?' }],
        tools,
        stream: true,
        stream_options: { include_usage: true },
      });
      const calls = new Map<number, { id: string; name: string; args: string }>();
      let finish: string | null = null;
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream) {
        usage = chunk.usage ?? usage;
        for (const c of chunk.choices) {
          for (const delta of c.delta.tool_calls ?? []) {
            const known = calls.get(delta.index);
            if (known === undefined) {
              assert.ok(delta.id, 'the first delta of a call carries its id');
              assert.equal(delta.function?.name, 'get_weather');
              calls.set(delta.index, { id: delta.id!, name: delta.function!.name!, args: delta.function?.arguments ?? '' });
            } else {
              assert.equal(delta.id ?? known.id, known.id);
              known.args += delta.function?.arguments ?? '';
            }
          }
          finish = c.finish_reason ?? finish;
        }
      }
      assert.equal(finish, 'tool_calls');
      assert.deepEqual([...calls.keys()].sort(), [0, 1]);
      assert.deepEqual([...calls.values()].map((c) => JSON.parse(c.args).city).sort(), ['Paris', 'Tokyo']);
      assert.notEqual(calls.get(0)!.id, calls.get(1)!.id);
      assert.ok(usage!.completion_tokens > 0);
    });

    test('chat.completions.parse with a zod schema', async () => {
      const Event = z.object({ name: z.string(), attendees: z.array(z.string()), confirmed: z.boolean() });
      const completion = await client().chat.completions.parse({
        model,
        messages: [{ role: 'user', content: 'Alice and Bob meet on Friday; extract the event.' }],
        response_format: zodResponseFormat(Event, 'event'),
      });
      const parsed = completion.choices[0]!.message.parsed!;
      assert.equal(typeof parsed.name, 'string');
      assert.ok(Array.isArray(parsed.attendees));
      assert.equal(typeof parsed.confirmed, 'boolean');
    });

    test('JSON mode (response_format json_object): the JSON object as the content, whole and streamed', async () => {
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Answer in JSON: is it ok?' }];
      const whole = await client().chat.completions.create({ model, messages, response_format: { type: 'json_object' } });
      assert.equal(whole.choices[0]!.finish_reason, 'stop');
      assert.equal(whole.choices[0]!.message.tool_calls, undefined);
      assert.deepEqual(JSON.parse(whole.choices[0]!.message.content!), { ok: true });
      assert.ok(whole.usage!.completion_tokens > 0);

      const stream = await client().chat.completions.create({ model, messages, response_format: { type: 'json_object' }, stream: true, stream_options: { include_usage: true } });
      let content = '';
      let deltas = 0;
      let finish: string | null = null;
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream) {
        if (chunk.usage) usage = chunk.usage;
        for (const c of chunk.choices) {
          assert.equal(c.delta.tool_calls, undefined);
          if (c.delta.content) {
            content += c.delta.content;
            deltas++;
          }
          finish = c.finish_reason ?? finish;
        }
      }
      assert.deepEqual(JSON.parse(content), { ok: true });
      assert.ok(deltas > 1, 'the JSON text streams in fragments');
      assert.equal(finish, 'stop');
      assert.equal(usage!.completion_tokens, whole.usage!.completion_tokens);
      assert.equal(usage!.prompt_tokens, whole.usage!.prompt_tokens);
    });

    test('runTools runs the function and finishes with an answer', async () => {
      const runner = client().chat.completions.runTools({
        model,
        messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
        tools: [
          {
            type: 'function',
            function: {
              name: 'get_weather',
              description: 'Weather in a city',
              parameters: weatherParameters,
              parse: JSON.parse,
              function: ({ city }: { city: string }) => `rain in ${city}`,
            },
          },
        ],
      });
      assert.match((await runner.finalContent()) ?? '', /rain in Paris/);
    });
  });

  describe(`LangChain ChatOpenAI on ${name}`, () => {
    const chat = () => new ChatOpenAI({ model, apiKey: key, configuration: { baseURL: `${sluice.url}/v1` }, maxRetries: 0 });

    test('bindTools: the model calls the tool with parsed arguments', async () => {
      const weather = langchainTool(async ({ city }: { city: string }) => `sun in ${city}`, {
        name: 'get_weather',
        description: 'Weather in a city',
        schema: z.object({ city: z.string() }),
      });
      const message = await chat().bindTools([weather]).invoke('What is the weather in Paris?');
      assert.equal(message.tool_calls?.length, 1);
      assert.equal(message.tool_calls![0]!.name, 'get_weather');
      assert.deepEqual(message.tool_calls![0]!.args, { city: 'Paris' });
    });

    test('withStructuredOutput with a zod schema', async () => {
      const Person = z.object({ name: z.string(), age: z.number() });
      const person = await chat().withStructuredOutput(Person).invoke('Ada is 36.');
      assert.equal(typeof person.name, 'string');
      assert.equal(typeof person.age, 'number');
    });

    test('withStructuredOutput in JSON mode: the parsed object', async () => {
      const Answer = z.object({ ok: z.boolean() });
      const answer = await chat().withStructuredOutput(Answer, { method: 'jsonMode' }).invoke('Is it ok? Answer in JSON with the key "ok".');
      assert.deepEqual(answer, { ok: true });
    });

    test('streams text', async () => {
      let text = '';
      for await (const chunk of await chat().stream('Say something')) text += String(chunk.content);
      assert.ok(text.length > 0);
    });
  });

  describe(`the Vercel AI SDK (OpenAI provider, chat) on ${name}`, () => {
    const provider = () => createOpenAI({ apiKey: key, baseURL: `${sluice.url}/v1` });

    test('generateText with a tool over several steps', async () => {
      const result = await generateText({
        model: provider().chat(model),
        prompt: 'What is the weather in Paris?',
        tools: {
          get_weather: tool({
            description: 'Weather in a city',
            inputSchema: z.object({ city: z.string() }),
            execute: async ({ city }) => `snow in ${city}`,
          }),
        },
        stopWhen: stepCountIs(3),
        maxRetries: 0,
      });
      assert.equal(result.steps.length, 2);
      assert.equal(result.steps[0]!.toolCalls[0]!.toolName, 'get_weather');
      assert.match(result.text, /snow in Paris/);
      assert.ok(result.totalUsage.inputTokens! > 0);
    });

    test('streamText delivers the text and the usage', async () => {
      const result = streamText({ model: provider().chat(model), prompt: 'Tell me a story', maxRetries: 0 });
      let text = '';
      for await (const delta of result.textStream) text += delta;
      assert.ok(text.length > 0);
      assert.equal(text, await result.text);
      assert.ok((await result.usage).outputTokens! > 0);
    });

    test('generateObject with a zod schema', async () => {
      const { object } = await generateObject({
        model: provider().chat(model),
        schema: z.object({ title: z.string(), tags: z.array(z.string()), rating: z.number() }),
        prompt: 'Describe a film.',
        maxRetries: 0,
      });
      assert.equal(typeof object.title, 'string');
      assert.ok(Array.isArray(object.tags));
      assert.equal(typeof object.rating, 'number');
    });
  });
}
