import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { ContentPart, StreamPart } from '../../../src/generation/model.js';
import { parseResponsesRequest, toGenerationRequest, type Item } from '../../../src/dialects/openai/responses/request.js';
import { CustomInputStream, responsesTools } from '../../../src/dialects/openai/responses/tools.js';
import { newResponseHead, outputItems, ResponsesStreamWriter } from '../../../src/dialects/openai/responses/writer.js';
import { MemorySink } from '../support/memory-sink.js';
import { FIXTURES } from './support/fixtures.js';
import { translatingModel } from './support/subjects.js';

/**
 * Codex's tools through a translated upstream, on its recorded requests (requests/openai-responses/
 * codex-exec*.json): flattened into functions for the upstream, and the upstream's calls written
 * back as Codex offered the tools (a `function_call` with its `namespace`, a `custom_tool_call`
 * with its `input`), whole and streamed; Codex's replay of those items maps to the same functions.
 */

const recorded = (name: string) => parseResponsesRequest(JSON.parse(readFileSync(join(FIXTURES, 'requests', 'openai-responses', `${name}.json`), 'utf8')).request.body);
const STOP = { reason: 'stop' as const, raw: undefined };
const USAGE = { input: 10, output: 5, cachedInput: 0, cacheWrite: 0, reasoning: 0 };

/** The SSE events a writer wrote, parsed. */
function events(body: string): Record<string, any>[] {
  return body
    .split('\n\n')
    .filter((frame) => frame.includes('data: '))
    .map((frame) => {
      const event = JSON.parse(frame.slice(frame.indexOf('data: ') + 6));
      assert.equal(frame.slice(7, frame.indexOf('\n')), event.type, 'the event line names the data’s type');
      return event;
    });
}

describe('Codex’s tools on a translated upstream', () => {
  test('with no model named: the additional_tools item’s namespaces become namespace__name functions, its custom tool one of a string', () => {
    const request = recorded('codex-exec-default-model');
    assert.equal(request.body.tools, undefined, 'Codex sends no tools in this shape');
    const tools = responsesTools([], request.input);
    assert.deepEqual(tools.dropped, []);
    const names = tools.functions.map((f) => f.name);
    assert.ok(names.includes('functions__exec') && names.includes('clock__sleep') && names.includes('collaboration__list_agents'), names.join());
    assert.equal(new Set(names).size, names.length, 'no name twice');
    assert.ok(names.every((name) => /^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$/.test(name)), 'every name is one every upstream takes');
    assert.deepEqual(tools.origin('functions__exec'), { kind: 'custom', name: 'exec', namespace: 'functions' });
    assert.deepEqual(tools.origin('clock__sleep'), { kind: 'function', name: 'sleep', namespace: 'clock' });
    const exec = tools.functions.find((f) => f.name === 'functions__exec')!;
    assert.deepEqual(Object.keys((exec.parameters as any).properties), ['input']);
    assert.match((exec.parameters as any).properties.input.description, /lark grammar:[\s\S]*pragma_source/);
    const sleep = tools.functions.find((f) => f.name === 'clock__sleep')!;
    assert.match(sleep.description!, /^Tools for reading and waiting on time\.\n\nPause execution/, 'the namespace’s description leads');
  });

  test('with a model named: the namespace’s functions join the plain ones, web_search is left out and named', () => {
    const request = recorded('codex-exec');
    const tools = responsesTools(request.body.tools ?? [], request.input);
    assert.deepEqual(tools.dropped, ['web_search']);
    assert.equal(tools.firstDroppedAt, 'tools[4].type');
    assert.deepEqual(
      tools.functions.map((f) => f.name),
      ['exec_command', 'write_stdin', 'request_user_input', 'multi_agent_v1__close_agent', 'multi_agent_v1__resume_agent', 'multi_agent_v1__send_input'],
    );
    assert.deepEqual(tools.origin('exec_command'), { kind: 'function', name: 'exec_command', namespace: undefined });
  });

  test('the upstream’s calls come back whole as Codex offered the tools, and Codex’s replay of them maps to the same functions', () => {
    const request = recorded('codex-exec-default-model');
    const tools = responsesTools([], request.input);
    const content: ContentPart[] = [
      { type: 'tool_call', id: 'call_1', name: 'clock__sleep', arguments: '{"duration_ms":1}' },
      { type: 'tool_call', id: 'call_2', name: 'functions__exec', arguments: '{"input":"text(\\"hi\\")"}' },
    ];
    const items = outputItems(content, 'anthropic', STOP, tools);
    assert.match(String(items[0]!.id), /^fc_/);
    assert.deepEqual({ ...items[0], id: undefined }, { id: undefined, type: 'function_call', status: 'completed', arguments: '{"duration_ms":1}', call_id: 'call_1', name: 'sleep', namespace: 'clock' });
    assert.match(String(items[1]!.id), /^ctc_/);
    assert.deepEqual({ ...items[1], id: undefined }, { id: undefined, type: 'custom_tool_call', status: 'completed', call_id: 'call_2', name: 'exec', namespace: 'functions', input: 'text("hi")' });

    // Codex's next turn replays the calls and answers them (as requests/openai-responses/codex-exec-default-model-*-call.json record).
    const replay: Item[] = [
      ...request.input,
      items[0]!,
      { type: 'function_call_output', call_id: 'call_1', output: 'Sleep completed.' },
      items[1]!,
      { type: 'custom_tool_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: 'hi' }] },
    ];
    const generation = toGenerationRequest({ ...request, input: replay }, replay, translatingModel('gpt-6.1-sol', 'anthropic'), 'anthropic', tools);
    const turns = generation.messages.slice(-4);
    assert.deepEqual(turns[0]!.content, [{ type: 'tool_call', id: 'call_1', name: 'clock__sleep', arguments: '{"duration_ms":1}' }]);
    assert.deepEqual(turns[1]!.content, [{ type: 'tool_result', toolCallId: 'call_1', name: 'clock__sleep', content: [{ type: 'text', text: 'Sleep completed.' }] }]);
    assert.deepEqual(turns[2]!.content, [{ type: 'tool_call', id: 'call_2', name: 'functions__exec', arguments: '{"input":"text(\\"hi\\")"}' }]);
    assert.deepEqual(turns[3]!.content, [{ type: 'tool_result', toolCallId: 'call_2', name: 'functions__exec', content: [{ type: 'text', text: 'hi' }] }]);
  });

  test('streamed: a namespaced call’s arguments as function_call_arguments events, a custom call’s input as custom_tool_call_input events', async () => {
    const request = recorded('codex-exec-default-model');
    const tools = responsesTools([], request.input);
    const sink = new MemorySink();
    let stored: Record<string, unknown> | undefined;
    const writer = new ResponsesStreamWriter(sink, newResponseHead(request.body), 'gemini', tools, { 'x-sluice-dropped-tools': 'web_search' }, async (response) => {
      stored = response;
    });
    await writer.begin();
    const parts: StreamPart[] = [
      { type: 'tool_call_start', choice: 0, index: 0, id: 'call_1', name: 'clock__sleep' },
      { type: 'tool_call_delta', choice: 0, index: 0, arguments: '{"duration_' },
      { type: 'tool_call_delta', choice: 0, index: 0, arguments: 'ms":1}' },
      { type: 'tool_call_end', choice: 0, index: 0 },
      { type: 'tool_call_start', choice: 0, index: 1, id: 'call_2', name: 'functions__exec' },
      { type: 'tool_call_delta', choice: 0, index: 1, arguments: '{"input":"text(' },
      { type: 'tool_call_delta', choice: 0, index: 1, arguments: '\\"hi\\")"}' },
      { type: 'tool_call_end', choice: 0, index: 1 },
      { type: 'finish', choice: 0, finish: { reason: 'tool_calls', raw: undefined } },
    ];
    for (const part of parts) await writer.part(part);
    await writer.close(USAGE);
    assert.equal(sink.header('x-sluice-dropped-tools'), 'web_search', 'the header goes with the head, before the first byte');
    const sent = events(sink.body);
    assert.deepEqual(
      sent.map((e) => e.type),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.function_call_arguments.delta',
        'response.function_call_arguments.delta',
        'response.function_call_arguments.done',
        'response.output_item.done',
        'response.output_item.added',
        'response.custom_tool_call_input.delta',
        'response.custom_tool_call_input.delta',
        'response.custom_tool_call_input.done',
        'response.output_item.done',
        'response.completed',
      ],
    );
    assert.deepEqual(sent.map((e) => e.sequence_number), sent.map((_, i) => i));
    const added = sent.filter((e) => e.type === 'response.output_item.added').map((e) => e.item);
    assert.equal(added[0].namespace, 'clock');
    assert.equal(added[0].name, 'sleep');
    assert.deepEqual([added[1].type, added[1].name, added[1].namespace, added[1].input, added[1].status], ['custom_tool_call', 'exec', 'functions', '', 'in_progress']);
    const custom = sent.filter((e) => e.type.startsWith('response.custom_tool_call_input'));
    assert.deepEqual(custom.map((e) => [e.item_id, e.output_index]), [[added[1].id, 1], [added[1].id, 1], [added[1].id, 1]]);
    assert.deepEqual(custom.slice(0, 2).map((e) => e.delta), ['text(', '"hi")'], 'the input told as its JSON string streams in, decoded');
    assert.equal(custom[2]!.input, 'text("hi")');
    const done = sent.filter((e) => e.type === 'response.output_item.done').map((e) => e.item);
    assert.deepEqual({ ...done[0], id: undefined }, { id: undefined, type: 'function_call', status: 'completed', arguments: '{"duration_ms":1}', call_id: 'call_1', name: 'sleep', namespace: 'clock' });
    assert.deepEqual({ ...done[1], id: undefined }, { id: undefined, type: 'custom_tool_call', status: 'completed', call_id: 'call_2', name: 'exec', namespace: 'functions', input: 'text("hi")' });
    const final = sent.at(-1)!.response;
    assert.deepEqual(final.output, done);
    assert.deepEqual(stored?.output, done, 'the stored response holds the items as Codex saw them');
  });

  test('flattened names stay unique and within upstream limits, and map back exactly', () => {
    const long = 'a'.repeat(60);
    const tools = responsesTools(
      [
        { type: 'function', name: 'clock__sleep', parameters: { type: 'object', properties: {} } },
        { type: 'namespace', name: 'clock', description: '', tools: [{ type: 'function', name: 'sleep' }] },
        { type: 'namespace', name: long, description: '', tools: [{ type: 'custom', name: 'run' }] },
        { type: 'namespace', name: '9lives', description: '', tools: [{ type: 'function', name: 'purr' }] },
        { type: 'web_search' },
        { type: 'file_search', vector_store_ids: ['vs_1'] },
        { type: 'web_search' },
      ],
      [],
    );
    const names = tools.functions.map((f) => f.name);
    assert.equal(names[0], 'clock__sleep', 'the caller’s own function keeps its name');
    assert.equal(new Set(names).size, names.length);
    assert.ok(names.every((name) => /^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$/.test(name)), names.join());
    assert.deepEqual(
      names.map((name) => tools.origin(name)),
      [
        { kind: 'function', name: 'clock__sleep', namespace: undefined },
        { kind: 'function', name: 'sleep', namespace: 'clock' },
        { kind: 'custom', name: 'run', namespace: long },
        { kind: 'function', name: 'purr', namespace: '9lives' },
      ],
    );
    assert.equal(tools.flatName('sleep', 'clock'), names[1]);
    assert.deepEqual(tools.dropped, ['web_search', 'file_search'], 'each type once');
  });

  test('streamed from Gemini: a signature on the answer’s last text part does not cut the message, it follows it as a reasoning item', async () => {
    const request = recorded('codex-exec-default-model');
    const sink = new MemorySink();
    const writer = new ResponsesStreamWriter(sink, newResponseHead(request.body), 'gemini', responsesTools([], request.input), {}, async () => {});
    await writer.begin();
    const parts: StreamPart[] = [
      { type: 'reasoning', choice: 0, text: 'Let me think.' },
      { type: 'text', choice: 0, text: 'Result: Script' },
      { type: 'reasoning_signature', choice: 0, signature: 'c2ln' },
      { type: 'text', choice: 0, text: ' failed' },
      { type: 'finish', choice: 0, finish: STOP },
    ];
    for (const part of parts) await writer.part(part);
    await writer.close(USAGE);
    const output = events(sink.body).at(-1)!.response.output;
    assert.deepEqual(output.map((item: any) => item.type), ['reasoning', 'message', 'reasoning']);
    assert.equal(output[1].content[0].text, 'Result: Script failed');
    assert.equal(output[0].encrypted_content, null);
    assert.equal(typeof output[2].encrypted_content, 'string', 'the signature kept, for the next turn');
  });

  test('a custom tool’s input is decoded as its JSON arguments stream in, however they are cut; other shapes tell nothing until the end', () => {
    const whole = '{ "input" : "line 1\\nsays \\"hi\\" \\u00e9\\ud83d\\ude00 \\\\ end" }';
    const expected = (JSON.parse(whole) as { input: string }).input;
    for (let size = 1; size <= whole.length; size++) {
      const stream = new CustomInputStream();
      let told = '';
      for (let at = size; at < whole.length + size; at += size) told += stream.next(whole.slice(0, Math.min(at, whole.length)));
      assert.equal(told, expected, `fragments of ${size}`);
    }
    const other = new CustomInputStream();
    assert.equal(other.next('{"code": "x"}'), '');
    assert.equal(other.next(`{"code": "x"}${' '.repeat(40)}`), '');
    const broken = new CustomInputStream();
    assert.equal(broken.next('{"input":"a\\qb"}'), 'a', 'an escape JSON has not ends what is told');
  });
});
