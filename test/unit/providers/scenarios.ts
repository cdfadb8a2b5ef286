/**
 * The conversations every adapter is tried with: one canonical request each, and the answer every
 * vendor's recorded reply must come to once mapped. Each vendor's fixtures record that same answer
 * in its own wire, so one expectation holds for all three.
 */
import { generationRequest, type FinishReason, type GenerationRequest, type Message, type ToolDefinition } from '../../../src/generation/model.js';

export interface ScenarioAnswer {
  /** Choice 0's text, exactly. */
  readonly text?: string;
  /** Choice 0's text, read as JSON (vendors space their JSON differently). */
  readonly json?: unknown;
  /** Choice 0's tool calls, their arguments read as JSON. */
  readonly toolCalls?: readonly { readonly name: string; readonly arguments: unknown }[];
  readonly finish: FinishReason;
  /** Usage must report a cached part of the input. */
  readonly cachedInput?: boolean;
  /** Usage must report reasoning tokens. */
  readonly reasoning?: boolean;
}

export interface Scenario {
  readonly request: GenerationRequest;
  readonly answer: ScenarioAnswer;
}

const WEATHER_TOOL: ToolDefinition = {
  name: 'get_weather',
  description: 'Current weather in a city.',
  parameters: {
    type: 'object',
    properties: { location: { type: 'string', description: 'City and country, e.g. Paris, France' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['location'],
  },
  strict: undefined,
};

const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] });

export const SCENARIOS = {
  /** A system prompt marked for caching, sampling settings and a stop sequence; a one-line answer. */
  text: {
    request: generationRequest({
      model: 'assistant',
      messages: [{ role: 'system', content: [{ type: 'text', text: 'You are a concise assistant. Answer in one sentence.', cacheBreakpoint: true }] }, user('Say hello.')],
      maxOutputTokens: 256,
      temperature: 0.2,
      topP: 0.9,
      stop: ['\n\n'],
      user: 'user-1234',
    }),
    answer: { text: 'Hello! How can I help you today?', finish: 'stop', cachedInput: true },
  },
  /** Two calls of one tool in one turn. */
  tools: {
    request: generationRequest({
      model: 'assistant',
      messages: [user('What is the weather in Paris and in Tokyo?')],
      tools: [WEATHER_TOOL],
      toolChoice: { type: 'auto' },
      maxOutputTokens: 1024,
    }),
    answer: {
      toolCalls: [
        { name: 'get_weather', arguments: { location: 'Paris, France', unit: 'celsius' } },
        { name: 'get_weather', arguments: { location: 'Tokyo, Japan', unit: 'celsius' } },
      ],
      finish: 'tool_calls',
    },
  },
  /** The conversation after a tool call: the call and its result go back upstream in the vendor's shape. */
  toolResult: {
    request: generationRequest({
      model: 'assistant',
      messages: [
        user('What is the weather in Paris?'),
        { role: 'assistant', content: [{ type: 'tool_call', id: 'call_weather_1', name: 'get_weather', arguments: '{"location":"Paris, France","unit":"celsius"}' }] },
        { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'call_weather_1', name: 'get_weather', content: [{ type: 'text', text: '{"temperature":18,"conditions":"sunny"}' }] }] },
      ],
      tools: [WEATHER_TOOL],
      maxOutputTokens: 1024,
    }),
    answer: { text: 'It is 18°C and sunny in Paris right now.', finish: 'stop' },
  },
  /** Reasoning asked for by effort; the answer reports its reasoning tokens. */
  reasoning: {
    request: generationRequest({ model: 'assistant', messages: [user('What is 27 * 43?')], maxOutputTokens: 4096, reasoning: { effort: 'low' } }),
    answer: { text: '27 × 43 = 1161.', finish: 'stop', reasoning: true },
  },
  /** JSON output without a schema. */
  jsonObject: {
    request: generationRequest({
      model: 'assistant',
      messages: [user('Give the capital of France as a JSON object with the keys city and country.')],
      responseFormat: { type: 'json_object' },
      maxOutputTokens: 256,
    }),
    answer: { json: { city: 'Paris', country: 'France' }, finish: 'stop' },
  },
} as const satisfies Record<string, Scenario>;

export type ScenarioName = keyof typeof SCENARIOS;

/**
 * Documents in a user turn, as each translating adapter must write them (their answer is the text
 * scenario's): a named PDF with a cache breakpoint and an unnamed plain-text file, both base64.
 */
export const DOCUMENT_REQUEST: GenerationRequest = generationRequest({
  model: 'assistant',
  messages: [
    {
      role: 'user',
      content: [
        { type: 'document', source: { kind: 'inline', mediaType: 'application/pdf', data: 'JVBERi0xLjcKJSVFT0YK' }, name: 'Q3 report.pdf', cacheBreakpoint: true },
        { type: 'document', source: { kind: 'inline', mediaType: 'text/plain', data: Buffer.from('The grass is green.', 'utf8').toString('base64') } },
        { type: 'text', text: 'Summarise both.' },
      ],
    },
  ],
  maxOutputTokens: 256,
});
