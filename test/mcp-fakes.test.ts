// postgres-pass: skip (the fake upstream MCP servers against the official SDK's client, no gateway and no store)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { STDIO_FAKE_PATH, startMcpUpstreams, type FakeMcpUpstream } from './fakes/mcp-upstreams.js';

/** The fakes themselves, driven by the SDK's own client: what the upstream layer's tests rely on. */

let upstreams: Awaited<ReturnType<typeof startMcpUpstreams>>;
before(async () => {
  upstreams = await startMcpUpstreams();
});
after(async () => {
  await upstreams.close();
});

const connect = async (upstream: FakeMcpUpstream, token = upstream.token): Promise<Client> => {
  const client = new Client({ name: 'fake-check', version: '1.0.0' });
  const requestInit = { headers: { Authorization: `Bearer ${token}` } };
  const url = new URL(upstream.url);
  await client.connect(upstream.kind === 'sse' ? new SSEClientTransport(url, { requestInit }) : new StreamableHTTPClientTransport(url, { requestInit }));
  return client;
};

describe('MCP fakes', () => {
  test('Streamable HTTP: bearer required, tools, a cancelled slow call recorded, session loss is a 404', async () => {
    await assert.rejects(connect(upstreams.http, 'wrong'), (error: { code?: number }) => error.code === 401);
    const client = await connect(upstreams.http);
    const { tools } = await client.listTools();
    assert.ok(tools.some((tool) => tool.name === 'files.read') && tools.some((tool) => tool.name.length > 64));
    assert.deepEqual((await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } })).structuredContent, { sum: 5 });
    assert.equal((await client.callTool({ name: 'fail', arguments: {} })).isError, true);
    await assert.rejects(client.callTool({ name: 'boom', arguments: {} }), /boom/);
    const progress: number[] = [];
    const controller = new AbortController();
    const slow = client.callTool({ name: 'slow', arguments: { ms: 5_000 } }, undefined, { signal: controller.signal, onprogress: (p) => (progress.push(p.progress), controller.abort()) });
    await assert.rejects(slow);
    await waitFor(() => upstreams.http.abortedCalls.length === 1);
    assert.equal(upstreams.http.cancellations.length, 1);
    assert.deepEqual(progress, [1]);
    const asked = await client.callTool({ name: 'ask_client', arguments: {} });
    assert.match(JSON.stringify(asked.content), /roots\/list: -32601/);
    await upstreams.http.forgetSessions();
    await assert.rejects(client.listTools(), (error: { code?: number }) => error.code === 404);
    await client.close();
  });

  test('SSE transport and the paged server', async () => {
    const sse = await connect(upstreams.sse);
    assert.deepEqual((await sse.readResource({ uri: 'fake://greetings/Ada' })).contents, [{ uri: 'fake://greetings/Ada', mimeType: 'text/plain', text: 'Hello, Ada!' }]);
    assert.equal((await sse.getPrompt({ name: 'greet', arguments: { name: 'Ada' } })).messages.length, 1);
    await sse.close();
    const paged = await connect(upstreams.paged);
    const first = await paged.listTools();
    assert.equal(first.tools.length, 7);
    assert.ok(first.nextCursor);
    await paged.close();
  });

  test('stdio: env passed, stderr written, crash exits', async () => {
    const stderr: string[] = [];
    const transport = new StdioClientTransport({ command: process.execPath, args: [STDIO_FAKE_PATH], env: { PATH: process.env.PATH ?? '', FAKE_STDIO_TOKEN: 'stdio-secret' }, stderr: 'pipe', cwd: fileURLToPath(new URL('.', import.meta.url)) });
    transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
    const client = new Client({ name: 'fake-check', version: '1.0.0' });
    await client.connect(transport);
    const env = JSON.parse((await client.callTool({ name: 'env', arguments: {} }) as { content: Array<{ text: string }> }).content[0]!.text);
    assert.equal(env.tokenArrived, true);
    const closed = new Promise<void>((resolve) => (client.onclose = resolve));
    await client.callTool({ name: 'crash', arguments: {} }).catch(() => undefined);
    await closed;
    assert.match(stderr.join(''), /starting with token stdio-secret/);
  });
});

async function waitFor(condition: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
