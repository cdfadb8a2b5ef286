// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row, both run on PostgreSQL by usage, limits, ledger-durability and the console files)
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { FunctionCallingMode, GoogleGenerativeAI, SchemaType, type FunctionDeclaration } from '@google/generative-ai';
import { ChatAnthropic } from '@langchain/anthropic';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { startThreeUpstreams, type ThreeUpstreams } from './support/upstreams.js';
import { createKey, startSluice, type RunningSluice } from './support/sluice.js';

/**
 * Further clients of the native dialects, each on every upstream kind: LangChain's ChatAnthropic
 * (which reads streamed input usage only from message_start) and Google's older
 * @google/generative-ai SDK (whose chat sends function responses in a turn of role `function`).
 */
let upstreams: ThreeUpstreams;
let sluice: RunningSluice;
let key: string;

const MODELS = ['claude', 'gemini-flash', 'llama-chat'] as const;

before(async () => {
  upstreams = await startThreeUpstreams();
  sluice = await startSluice({
    config: `${upstreams.providersYaml}
models:
  - { id: claude, provider: anthropic, upstream_model: claude-test, endpoints: [chat], max_output_tokens: 8000 }
  - { id: gemini-flash, provider: google, upstream_model: gemini-test, endpoints: [chat], max_output_tokens: 8000 }
  - { id: llama-chat, provider: vllm, upstream_model: upstream-model, endpoints: [chat], max_output_tokens: 8000 }
`,
  });
  key = (await createKey(sluice.dataDir, 'acme')).key;
});

after(async () => {
  assert.equal(await sluice.stop(), 0);
  await upstreams.close();
});

beforeEach(() => upstreams.reset());

const weather = tool(async ({ city }: { city: string }) => `sunny in ${city}`, {
  name: 'get_weather',
  description: 'The weather in a city',
  schema: z.object({ city: z.string() }),
});

for (const model of MODELS) {
  describe(`LangChain ChatAnthropic on ${model}`, () => {
    const chat = () => new ChatAnthropic({ model, apiKey: key, anthropicApiUrl: sluice.url, maxRetries: 0, maxTokens: 200 });

    test('a stream carries input and output usage', async () => {
      let merged;
      for await (const chunk of await chat().stream('Tell me about the sea.')) merged = merged === undefined ? chunk : merged.concat(chunk);
      assert.ok(merged !== undefined && String(merged.content).length > 0);
      assert.ok(merged.usage_metadata!.input_tokens > 0, JSON.stringify(merged.usage_metadata));
      assert.ok(merged.usage_metadata!.output_tokens > 0);
    });

    test('bindTools: a tool call, then its result answered', async () => {
      const llm = chat().bindTools([weather]);
      const question = { role: 'user' as const, content: 'What is the weather in Paris?' };
      const first = await llm.invoke([question]);
      assert.equal(first.tool_calls?.[0]?.name, 'get_weather');
      assert.deepEqual(first.tool_calls?.[0]?.args, { city: 'Paris' });
      const result = await weather.invoke(first.tool_calls![0]!);
      const second = await llm.invoke([question, first, result]);
      assert.match(String(second.content), /Result: sunny in Paris/);
    });
  });

  describe(`@google/generative-ai on ${model}`, () => {
    const declaration: FunctionDeclaration = {
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: { type: SchemaType.OBJECT, properties: { city: { type: SchemaType.STRING } }, required: ['city'] },
    };

    test('a chat with function calling: the call, then the function turn answered', async () => {
      const generative = new GoogleGenerativeAI(key).getGenerativeModel(
        { model, tools: [{ functionDeclarations: [declaration] }], toolConfig: { functionCallingConfig: { mode: FunctionCallingMode.AUTO } } },
        { baseUrl: sluice.url },
      );
      const chat = generative.startChat();
      const first = await chat.sendMessage('What is the weather in Paris?');
      const calls = first.response.functionCalls();
      assert.equal(calls?.[0]?.name, 'get_weather');
      assert.deepEqual(calls?.[0]?.args, { city: 'Paris' });
      const second = await chat.sendMessage([{ functionResponse: { name: 'get_weather', response: { weather: 'sunny' } } }]);
      assert.match(second.response.text(), /Result: .*sunny/);
      const history = await chat.getHistory();
      assert.equal(history[2]!.role, 'function', 'the SDK sent the result in a function turn');
    });

    test('a stream and a token count', async () => {
      const generative = new GoogleGenerativeAI(key).getGenerativeModel({ model }, { baseUrl: sluice.url });
      const streamed = await generative.generateContentStream('Tell me about the sea.');
      let text = '';
      for await (const chunk of streamed.stream) text += chunk.text();
      assert.ok(text.length > 0);
      assert.equal((await streamed.response).text(), text);
      assert.ok((await generative.countTokens('How many tokens is this?')).totalTokens > 0);
    });
  });
}
