import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { boundedFetch, ForeignOriginError } from '../../../src/mcp/upstream/bounded-fetch.js';
import { LineReader, limitEventStream, limitWholeBody, MessageEnds, MessageTooLargeError, type OversizedMessage } from '../../../src/mcp/upstream/message-limit.js';

const bytes = (text: string) => new TextEncoder().encode(text);
const streamOf = (...chunks: string[]) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(bytes(chunk));
      controller.close();
    },
  });
const readAll = async (stream: ReadableStream<Uint8Array>) => new TextDecoder().decode(new Uint8Array(await new Response(stream).arrayBuffer()));

describe('MessageEnds: the id of a dropped message', () => {
  const idOf = (...pieces: string[]) => {
    const ends = new MessageEnds();
    for (const piece of pieces) ends.feed(bytes(piece));
    return ends.requestId();
  };
  test('found first or last, as peers write it, across pieces', () => {
    assert.equal(idOf('{"jsonrpc":"2.0","id":7,"result":{"content":"', 'x'.repeat(5000), '"}}'), 7);
    assert.equal(idOf('{"result":{"text":"', 'y'.repeat(5000), '"},"jsonrpc":"2.0","id":12}'), 12);
    assert.equal(idOf('{"result":{},"id":"abc","jsonrpc":"2.0"}\n'), 'abc');
    assert.equal(idOf('event: message\ndata: {"result":{"a":"', 'z'.repeat(3000), '"},"jsonrpc":"2.0","id":3}\n'), 3);
  });
  test('a nested id is not taken for the message\'s own', () => {
    assert.equal(idOf('{"result":{"content":[{"id":5}]', 'q'.repeat(2000), ',"x":{"id":9}}}'), undefined);
  });
});

describe('limitWholeBody', () => {
  test('passes a body within the cap untouched', async () => {
    assert.equal(await readAll(streamOf('{"a":', '1}').pipeThrough(limitWholeBody(10, () => assert.fail('not oversized')))), '{"a":1}');
  });
  test('errors past the cap, reporting it once', async () => {
    const reports: OversizedMessage[] = [];
    const stream = streamOf('{"jsonrpc":"2.0","id":4,', '"result":"', 'x'.repeat(100), '"}').pipeThrough(limitWholeBody(50, (message) => reports.push(message)));
    await assert.rejects(readAll(stream), MessageTooLargeError);
    assert.deepEqual(reports, [{ requestId: 4 }]);
  });
});

describe('limitEventStream', () => {
  test('cuts an oversized event, ends it for the parser, and lets the next events through', async () => {
    const reports: OversizedMessage[] = [];
    const big = `event: message\ndata: {"result":{"t":"${'x'.repeat(300)}"},"jsonrpc":"2.0","id":8}\n\n`;
    const small = 'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n';
    const out = await readAll(streamOf(small, big.slice(0, 100), big.slice(100), small).pipeThrough(limitEventStream(120, (message) => reports.push(message))));
    assert.deepEqual(reports, [{ requestId: 8 }]);
    assert.ok(out.startsWith(small) && out.endsWith(small));
    // What passed of the big event is less than the cap, then the blank line that ends it.
    const middle = out.slice(small.length, out.length - small.length);
    assert.ok(middle.length <= 122, `passed ${middle.length} bytes of it`);
    assert.ok(middle.endsWith('\n\n'));
  });
  test('counts each event on its own, with CRLF line ends', async () => {
    const event = 'data: {"jsonrpc":"2.0","method":"x"}\r\n\r\n';
    const many = Array.from({ length: 50 }, () => event);
    const out = await readAll(streamOf(...many).pipeThrough(limitEventStream(event.length, () => assert.fail('each event is within the cap'))));
    assert.equal(out, many.join(''));
  });
});

describe('LineReader', () => {
  test('splits lines across chunks and drops a line past the cap, reporting its id', () => {
    const lines: string[] = [];
    const reports: OversizedMessage[] = [];
    const reader = new LineReader(40, (line) => lines.push(line), (message) => reports.push(message));
    reader.push(Buffer.from('{"a":1}\n{"b"'));
    reader.push(Buffer.from(':2}\r\n'));
    reader.push(Buffer.from(`{"result":"${'x'.repeat(100)}`));
    reader.push(Buffer.from(`${'x'.repeat(100)}","jsonrpc":"2.0","id":21}\n{"c":3}\n\n`));
    assert.deepEqual(lines, ['{"a":1}', '{"b":2}', '{"c":3}']);
    assert.deepEqual(reports, [{ requestId: 21 }]);
  });
  test('holds at most the cap of an endless line', () => {
    const reports: OversizedMessage[] = [];
    const reader = new LineReader(1024, () => assert.fail('no line ends'), (message) => reports.push(message));
    const chunk = Buffer.alloc(64 * 1024, 0x78);
    for (let i = 0; i < 100; i++) reader.push(chunk);
    assert.ok((reader as unknown as { pendingBytes: number }).pendingBytes <= 1024);
    reader.push(Buffer.from('\n'));
    assert.equal(reports.length, 1);
  });
});

describe('boundedFetch', () => {
  const serverUrl = new URL('http://127.0.0.1:9/mcp');
  const answering = (body: string, contentType: string) => (async () => new Response(body, { headers: { 'content-type': contentType } })) as unknown as typeof fetch;
  test('refuses any URL off the configured origin, before any request', async () => {
    let called = false;
    const fetchFn = boundedFetch({ serverUrl, maxMessageBytes: () => 100, onOversized: () => undefined, onBroken: () => undefined, baseFetch: (async () => ((called = true), new Response(''))) as unknown as typeof fetch });
    await assert.rejects(fetchFn('http://127.0.0.1:10/mcp'), ForeignOriginError);
    await assert.rejects(fetchFn('https://127.0.0.1:9/mcp'), ForeignOriginError);
    assert.equal(called, false);
  });
  test('never lets the fetch follow redirects, and names the POSTed request of an oversized JSON answer', async () => {
    let redirect: RequestInit['redirect'];
    const reports: Array<string | number | undefined> = [];
    const fetchFn = boundedFetch({
      serverUrl,
      maxMessageBytes: () => 20,
      onOversized: (id) => reports.push(id),
      onBroken: () => undefined,
      baseFetch: (async (_url: URL, init: RequestInit) => ((redirect = init.redirect), new Response(`{"result":"${'x'.repeat(100)}"}`, { headers: { 'content-type': 'application/json' } }))) as unknown as typeof fetch,
    });
    const response = await fetchFn('http://127.0.0.1:9/mcp', { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 31, method: 'tools/call' }) });
    assert.equal(redirect, 'manual');
    await assert.rejects(response.json());
    assert.deepEqual(reports, [31]);
  });
  test('an event stream within the cap reads as it came', async () => {
    const fetchFn = boundedFetch({ serverUrl, maxMessageBytes: () => 1000, onOversized: () => assert.fail('within'), onBroken: () => undefined, baseFetch: answering('data: {}\n\n', 'text/event-stream') });
    assert.equal(await (await fetchFn(serverUrl)).text(), 'data: {}\n\n');
  });
});
