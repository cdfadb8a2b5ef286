import { GatewayError } from '../../../../src/core/errors.js';
import { usageOf, type ContentPart, type Finish, type GeneratedChoice, type GenerationResult, type StreamPart, type TokenLogprob, type Usage } from '../../../../src/generation/model.js';

/**
 * Canonical answers, as every upstream adapter hands them to a caller dialect: a sequence of stream
 * parts, and the same answer whole. Each dialect writes each of these (where it has a place for
 * it), and what it writes is compared with a stored, reviewed snapshot.
 */
export interface Scenario {
  readonly name: string;
  readonly about: string;
  readonly parts: readonly StreamPart[];
  /** The stream fails with this after its parts (the whole answer fails with it at once). */
  readonly failure?: GatewayError;
  /** What the caller must ask for to see all of it. */
  readonly asks?: { readonly choices?: number; readonly logprobs?: number; readonly thoughts?: boolean };
  /** Only dialects whose callers can ask for several choices, or log-probabilities, write it. */
  readonly needs?: 'choices' | 'logprobs';
}

export const UPSTREAM_ID = 'gen-upstream-1';
/** 2026-01-01T00:00:00Z: what the upstream says; Sluice stamps its own answers with the current time. */
export const UPSTREAM_CREATED = 1_767_225_600;

const start: StreamPart = { type: 'start', id: UPSTREAM_ID, created: UPSTREAM_CREATED };
const text = (t: string, choice = 0, logprobs?: TokenLogprob[]): StreamPart => (logprobs === undefined ? { type: 'text', choice, text: t } : { type: 'text', choice, text: t, logprobs });
const finish = (f: Finish, choice = 0): StreamPart => ({ type: 'finish', choice, finish: f });
const usage = (u: Usage): StreamPart => ({ type: 'usage', usage: u });
const STOP: Finish = { reason: 'stop', raw: 'stop' };

const token = (t: string, logprob: number, alternatives: [string, number][]): TokenLogprob => ({
  token: t,
  logprob,
  bytes: [...Buffer.from(t, 'utf8')],
  top: alternatives.map(([alt, lp]) => ({ token: alt, logprob: lp, bytes: [...Buffer.from(alt, 'utf8')] })),
});

export const SCENARIOS: readonly Scenario[] = [
  {
    name: 'text',
    about: 'text in two deltas, a plain stop, usage',
    parts: [start, text('Hello'), text(', world!'), finish(STOP), usage(usageOf(12, 5))],
  },
  {
    name: 'stop-sequence',
    about: 'text ended by a stop sequence the upstream names (as vLLM does, in its own words: raw `stop`)',
    parts: [start, text('The answer is 42.'), finish({ reason: 'stop', raw: 'stop', stopSequence: '\n\nHuman:' }), usage(usageOf(10, 6))],
  },
  {
    name: 'length',
    about: 'text cut at the output limit',
    parts: [start, text('It was the best of times, it was'), finish({ reason: 'length', raw: 'max_tokens' }), usage(usageOf(10, 8))],
  },
  {
    name: 'reasoning',
    about: 'signed reasoning in two deltas, then text; usage with reasoning and cached input tokens',
    parts: [start, { type: 'reasoning', choice: 0, text: 'Two plus ' }, { type: 'reasoning', choice: 0, text: 'two is four.' }, { type: 'reasoning_signature', choice: 0, signature: 'sig-abc123' }, text('It is 4.'), finish(STOP), usage(usageOf(20, 15, { reasoning: 6, cachedInput: 8 }))],
    asks: { thoughts: true },
  },
  {
    name: 'redacted-reasoning',
    about: 'reasoning the upstream returned encrypted, then text',
    parts: [start, { type: 'redacted_reasoning', choice: 0, data: 'EmwKAhgBEgy3va3pzix' }, text('Done.'), finish(STOP), usage(usageOf(9, 4, { reasoning: 2 }))],
    asks: { thoughts: true },
  },
  {
    name: 'tool-calls',
    about: 'text, then two tool calls, their arguments in fragments',
    parts: [
      start,
      text('Let me check.'),
      { type: 'tool_call_start', choice: 0, index: 0, id: 'call_1', name: 'get_weather' },
      { type: 'tool_call_delta', choice: 0, index: 0, arguments: '{"city":' },
      { type: 'tool_call_delta', choice: 0, index: 0, arguments: '"Paris"}' },
      { type: 'tool_call_end', choice: 0, index: 0 },
      { type: 'tool_call_start', choice: 0, index: 1, id: 'call_2', name: 'get_time' },
      { type: 'tool_call_delta', choice: 0, index: 1, arguments: '{}' },
      { type: 'tool_call_end', choice: 0, index: 1 },
      finish({ reason: 'tool_calls', raw: 'tool_use' }),
      usage(usageOf(30, 20)),
    ],
  },
  {
    name: 'content-filter',
    about: 'nothing said: the upstream’s filter withheld the answer',
    parts: [start, finish({ reason: 'content_filter', raw: 'SAFETY' }), usage(usageOf(7, 0))],
  },
  {
    name: 'empty',
    about: 'an answer with no content and a plain stop',
    parts: [start, finish(STOP), usage(usageOf(3, 0))],
  },
  {
    name: 'two-choices',
    about: 'two choices interleaved, each with its own finish',
    parts: [start, text('Yes', 0), text('No', 1), text('.', 0), finish({ reason: 'length', raw: 'max_tokens' }, 1), finish(STOP, 0), usage(usageOf(5, 3))],
    asks: { choices: 2 },
    needs: 'choices',
  },
  {
    name: 'logprobs',
    about: 'text with per-token log-probabilities and two alternatives each',
    parts: [start, text('Hi', 0, [token('Hi', -0.25, [['Hi', -0.25], ['Hello', -1.75]])]), text(' there', 0, [token(' there', -0.5, [[' there', -0.5], ['!', -1.5]])]), finish(STOP), usage(usageOf(4, 2))],
    asks: { logprobs: 2 },
    needs: 'logprobs',
  },
  {
    name: 'no-usage',
    about: 'an upstream that reports no usage: Sluice counts with its own tokenizer',
    parts: [start, text('Counted by the gateway.'), finish(STOP)],
  },
  {
    name: 'failure',
    about: 'the upstream fails after some text (streamed), or at once (whole)',
    parts: [start, text('Partial answer')],
    failure: new GatewayError('upstream_error', "The upstream provider 'scripted' failed: connection reset.", { upstreamFailure: 'connect_error' }),
  },
];

/** The scenario's answer whole: consecutive text joined, signed reasoning as one part, tool calls with their whole arguments. */
export function resultOf(scenario: Scenario): GenerationResult {
  const choices = new Map<number, { content: ContentPart[]; finish: Finish | undefined; logprobs: TokenLogprob[] | undefined }>();
  const choice = (index: number) => {
    let c = choices.get(index);
    if (c === undefined) choices.set(index, (c = { content: [], finish: undefined, logprobs: undefined }));
    return c;
  };
  const calls = new Map<string, { id: string; name: string; args: string }>();
  let reported: Usage | null = null;
  for (const part of scenario.parts) {
    if (part.type === 'start') continue;
    if (part.type === 'usage') {
      reported = part.usage;
      continue;
    }
    const c = choice(part.choice);
    const last = c.content.at(-1);
    switch (part.type) {
      case 'text':
        if (last?.type === 'text') c.content[c.content.length - 1] = { type: 'text', text: last.text + part.text };
        else c.content.push({ type: 'text', text: part.text });
        if (part.logprobs !== undefined) c.logprobs = [...(c.logprobs ?? []), ...part.logprobs];
        break;
      case 'reasoning':
        if (last?.type === 'reasoning' && last.signature === undefined && last.redactedData === undefined) c.content[c.content.length - 1] = { type: 'reasoning', text: last.text + part.text };
        else c.content.push({ type: 'reasoning', text: part.text });
        break;
      case 'reasoning_signature':
        if (last?.type === 'reasoning') c.content[c.content.length - 1] = { ...last, signature: part.signature };
        else c.content.push({ type: 'reasoning', text: '', signature: part.signature });
        break;
      case 'redacted_reasoning':
        c.content.push({ type: 'reasoning', text: '', redactedData: part.data });
        break;
      case 'tool_call_start':
        calls.set(`${part.choice}:${part.index}`, { id: part.id, name: part.name, args: '' });
        break;
      case 'tool_call_delta':
        calls.get(`${part.choice}:${part.index}`)!.args += part.arguments;
        break;
      case 'tool_call_end': {
        const call = calls.get(`${part.choice}:${part.index}`)!;
        c.content.push({ type: 'tool_call', id: call.id, name: call.name, arguments: call.args });
        break;
      }
      case 'finish':
        c.finish = part.finish;
        break;
    }
  }
  const generated: GeneratedChoice[] = [...choices.entries()]
    .sort(([a], [b]) => a - b)
    .map(([index, c]) => ({ index, content: c.content, finish: c.finish ?? { reason: 'stop', raw: undefined }, logprobs: c.logprobs }));
  return { id: UPSTREAM_ID, created: UPSTREAM_CREATED, choices: generated, usage: reported };
}

/** The usage the scenario's upstream reports, or null. */
export function reportedUsage(scenario: Scenario): Usage | null {
  for (const part of scenario.parts) if (part.type === 'usage') return part.usage;
  return null;
}
