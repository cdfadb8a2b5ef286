// postgres-pass: skip (wire behaviour: the store is reached only to look up the key and write the ledger row, both run on PostgreSQL by usage, limits, ledger-durability and the console files)
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { parseConfig } from '../src/config/config-file.js';
import { startFakeAnthropic } from './fakes/fake-anthropic.js';
import { startFakeGemini } from './fakes/fake-gemini.js';
import { sleep, type RecordedRequest } from './fakes/fake-server.js';
import { startFakeOpenAI, WORDS, type FakeUpstream } from './fakes/fake-openai-upstream.js';
import { ConsoleClient, createAccount } from './support/console.js';
import { configFor, createKey, eventually, startSluice, type RunningSluice } from './support/sluice.js';

/**
 * Upstreams at fault, seen through the real gateway: connections dropped without a word, secrets
 * quoted in error messages, answers too large to hold, stalls.
 */

/** Gateways and fakes to stop at the end, newest first; a gateway must exit cleanly. */
const stops: (() => Promise<void>)[] = [];
after(async () => {
  for (const stop of stops.reverse()) await stop();
});

async function fakeOpenAI(): Promise<FakeUpstream> {
  const upstream = await startFakeOpenAI({ apiKey: 'upstream-secret-credential' });
  stops.push(() => upstream.close());
  return upstream;
}

/**
 * One worker, so that every request goes through the same connection pool and connection counts
 * mean something; and one attempt per request, so that what is counted here is the adapter's and
 * the pool's doing (routing's own attempts are routing.test.ts's).
 */
async function gateway(config: string): Promise<{ sluice: RunningSluice; client: OpenAI }> {
  const sluice = await startSluice({ config: `routing: { retries: 0 }\n${config}`, args: ['--workers', '1'] });
  stops.push(async () => assert.equal(await sluice.stop(), 0));
  const { key } = await createKey(sluice.dataDir, 'acme');
  // The SDK's own retries would hide what the gateway does.
  return { sluice, client: new OpenAI({ apiKey: key, baseURL: `${sluice.url}/v1`, maxRetries: 0 }) };
}

function providerOptions(upstreamUrl: string, options: string): string {
  return configFor(upstreamUrl).replace('api_key: upstream-secret-credential', `api_key: upstream-secret-credential\n    ${options}`);
}

async function completionText(client: OpenAI, stream: boolean): Promise<string> {
  if (!stream) return (await client.completions.create({ model: 'llama-8b', prompt: 'x', max_tokens: 3 })).choices[0]!.text;
  let text = '';
  for await (const chunk of await client.completions.create({ model: 'llama-8b', prompt: 'x', max_tokens: 3, stream: true })) text += chunk.choices[0]?.text ?? '';
  return text;
}

describe('idle upstream connections the upstream has dropped', () => {
  for (const how of ['reset', 'close'] as const) {
    test(`a connection the upstream dropped while idle (${how}) is not used again: every request succeeds, each read once`, async () => {
      const upstream = await fakeOpenAI();
      // Long enough for the answer to be read before a reset, which would throw it away.
      upstream.behaviour = { dropIdleConnections: { afterMs: 50, how } };
      const { client } = await gateway(configFor(upstream.url));
      const total = 10;
      for (let i = 0; i < total; i++) {
        assert.equal(await completionText(client, i % 2 === 1), WORDS.slice(0, 3).join(''), `request ${i}`);
        // The next request meets the pool's connection already dropped.
        await eventually(() => (upstream.dropped === i + 1 ? true : undefined), 2000, `connection ${i + 1} dropped`);
      }
      assert.equal(upstream.requests.length, total);
      assert.equal(upstream.connections, total);
    });
  }

  test('keep_alive_timeout_ms closes an idle connection before the upstream forgets it', async () => {
    const upstream = await fakeOpenAI();
    upstream.behaviour = { dropIdleConnections: { afterMs: 400, how: 'reset' } };
    const { client } = await gateway(providerOptions(upstream.url, 'keep_alive_timeout_ms: 100'));
    await completionText(client, false);
    await sleep(600);
    await completionText(client, false);
    assert.equal(upstream.dropped, 0, 'the gateway closed the idle connection before the upstream dropped it');
    assert.equal(upstream.connections, 2);
  });

  test('a request the upstream read and then failed is not sent again', async () => {
    const upstream = await fakeOpenAI();
    // Each request on a new connection, as the fake resets each one: the upstream may have acted on it.
    upstream.behaviour = { hangUp: 'after-request' };
    const { client } = await gateway(configFor(upstream.url));
    for (let i = 0; i < 3; i++) {
      await assert.rejects(client.completions.create({ model: 'llama-8b', prompt: 'x' }), (error: InstanceType<typeof OpenAI.APIError>) => {
        assert.equal(error.status, 502);
        return true;
      });
    }
    assert.equal(upstream.requests.length, 3, 'one attempt per request');
  });

  test('a request the upstream read on a reused connection, then reset before any answer, is not sent again', async () => {
    const upstream = await fakeOpenAI();
    const { client } = await gateway(configFor(upstream.url));
    await completionText(client, false); // leaves an idle connection, which the next request reuses
    upstream.behaviour = { hangUp: 'after-request' };
    await assert.rejects(client.completions.create({ model: 'llama-8b', prompt: 'x' }), (error: InstanceType<typeof OpenAI.APIError>) => {
      assert.equal(error.status, 502);
      return true;
    });
    assert.equal(upstream.requests.length, 2, 'the upstream read the second request once');
    assert.equal(upstream.connections, 1, 'on the reused connection');
  });

  test('a reused connection lost after the answer began is not retried', async () => {
    const upstream = await fakeOpenAI();
    const { client } = await gateway(configFor(upstream.url));
    await completionText(client, false); // leaves an idle connection, which the next request reuses
    upstream.behaviour = { hangUp: 'after-status-line' };
    await assert.rejects(client.completions.create({ model: 'llama-8b', prompt: 'x' }), (error: InstanceType<typeof OpenAI.APIError>) => {
      assert.equal(error.status, 502);
      return true;
    });
    assert.equal(upstream.requests.length, 2);
    assert.equal(upstream.connections, 1);
  });

  test('a timeout on a reused connection is not retried', async () => {
    const upstream = await fakeOpenAI();
    const { client } = await gateway(providerOptions(upstream.url, 'response_timeout_ms: 300'));
    await completionText(client, false);
    // Far past the timeout, so that a gateway held up on a busy machine still meets the timeout first.
    upstream.behaviour = { headerDelayMs: 3000 };
    await assert.rejects(client.completions.create({ model: 'llama-8b', prompt: 'x' }), (error: InstanceType<typeof OpenAI.APIError>) => {
      assert.equal(error.status, 504);
      return true;
    });
    assert.equal(upstream.requests.length, 2);
  });
});

describe('secrets in upstream error messages', () => {
  const ORG_SECRET = 'org-secret-5d1f9a7c';
  // Each adapter's own credential header, next to the configured one.
  const kinds = [
    { kind: 'openai', model: 'llama-8b', credentialHeader: 'authorization', errorBody: (message: string) => ({ error: { message, type: 'BadRequestError', param: null, code: 400 } }) },
    { kind: 'anthropic', model: 'claude', credentialHeader: 'x-api-key', errorBody: (message: string) => ({ type: 'error', error: { type: 'invalid_request_error', message }, request_id: 'req_1' }) },
    { kind: 'gemini', model: 'gemini', credentialHeader: 'x-goog-api-key', errorBody: (message: string) => ({ error: { code: 400, message, status: 'INVALID_ARGUMENT' } }) },
  ] as const;
  /** What a server that quotes the request it refuses would say. */
  const echo = (credentialHeader: string) => (request: RecordedRequest) =>
    `refused for organisation ${String(request.headers['x-org-secret'])} (credential ${String(request.headers[credentialHeader])})`;

  test('never reach the caller or the logs, whatever the provider kind and wherever the message comes', async () => {
    const upstreams = {
      openai: await startFakeOpenAI({ apiKey: 'openai-credential-1b2c' }),
      anthropic: await startFakeAnthropic({ apiKey: 'anthropic-credential-3d4e' }),
      gemini: await startFakeGemini({ apiKey: 'gemini-credential-5f6a' }),
    };
    for (const upstream of Object.values(upstreams)) stops.push(() => upstream.close());
    const { sluice } = await gateway(`
providers:
  - { id: p-openai, kind: openai, base_url: ${upstreams.openai.url}, api_key: openai-credential-1b2c, headers: { x-org-secret: ${ORG_SECRET} } }
  - { id: p-anthropic, kind: anthropic, base_url: ${upstreams.anthropic.url}, api_key: anthropic-credential-3d4e, headers: { x-org-secret: ${ORG_SECRET} } }
  - { id: p-gemini, kind: gemini, base_url: ${upstreams.gemini.url}, api_key: gemini-credential-5f6a, headers: { x-org-secret: ${ORG_SECRET} } }
models:
  - { id: llama-8b, provider: p-openai, upstream_model: upstream-model }
  - { id: claude, provider: p-anthropic, upstream_model: claude-test }
  - { id: gemini, provider: p-gemini, upstream_model: gemini-test }
`);
    const { key } = await createKey(sluice.dataDir, 'secrets');
    const secrets = [ORG_SECRET, 'openai-credential-1b2c', 'anthropic-credential-3d4e', 'gemini-credential-5f6a'];
    const ask = async (model: string, stream: boolean) => {
      const response = await fetch(`${sluice.url}/v1/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, prompt: 'hello there', max_tokens: 5, stream }),
      });
      return { status: response.status, text: await response.text() };
    };
    const assertClean = (text: string, what: string) => {
      for (const secret of secrets) assert.ok(!text.includes(secret), `${what} leaks ${secret}: ${text}`);
      // The upstream's words are kept, its secrets not.
      assert.match(text, /refused for organisation \[redacted\] \(credential (Bearer )?\[redacted\]\)/, what);
    };

    for (const { kind, model, credentialHeader, errorBody } of kinds) {
      const upstream = upstreams[kind];
      const message = echo(credentialHeader);
      upstream.behaviour = { fail: { status: 400, body: (request) => JSON.stringify(errorBody(message(request))) } };
      const refused = await ask(model, false);
      assert.equal(refused.status, 400, `${kind}: ${refused.text}`);
      assertClean(refused.text, `${kind}: a 4xx answer`);
      assert.equal(upstream.requests.at(-1)!.headers['x-org-secret'], ORG_SECRET, 'the header did go upstream');

      // A stream is held until its first content: failing before it, it is still an HTTP error (and
      // logged), Anthropic's overloaded_error and Google's 503 UNAVAILABLE a 503; after it, the caller gets an error event.
      // Anthropic's first content is its fourth event (after message_start, content_block_start and a ping).
      for (const errorAfterChunks of [0, kind === 'anthropic' ? 4 : 3]) {
        upstream.behaviour = { errorAfterChunks, errorMessage: message };
        const failed = await ask(model, true);
        assert.equal(failed.status, errorAfterChunks === 0 ? (kind === 'openai' ? 502 : 503) : 200, `${kind}: ${failed.text}`);
        assertClean(failed.text, `${kind}: a stream failing after ${errorAfterChunks} events`);
      }
    }
    assert.equal(await sluice.stop(), 0);
    const log = sluice.stderr();
    for (const secret of secrets) assert.ok(!log.includes(secret), `the log leaks ${secret}`);
    assert.match(log, /\[redacted\]/, 'the failures were logged, redacted');
  });
});

describe('a whole upstream answer larger than max_response_bytes', () => {
  let upstream: FakeUpstream;
  let sluice: RunningSluice;
  let client: OpenAI;
  before(async () => {
    upstream = await fakeOpenAI();
    ({ sluice, client } = await gateway(providerOptions(upstream.url, 'max_response_bytes: 1000')));
  });

  test('an answer of exactly the limit passes', async () => {
    upstream.behaviour = { largeAnswer: { bytes: 1000, contentLength: false } };
    const completion = await client.completions.create({ model: 'llama-8b', prompt: 'x' });
    assert.match(completion.choices[0]!.text, /^x+$/);
  });

  for (const contentLength of [true, false]) {
    for (const bytes of [1001, 16 * 1024 * 1024]) {
      test(`is refused with a 502 naming the limit, and the upstream's answer cut (${bytes} bytes, ${contentLength ? 'with' : 'without'} content-length)`, async () => {
        upstream.behaviour = { largeAnswer: { bytes, contentLength } };
        const error = await client.completions.create({ model: 'llama-8b', prompt: 'x' }).then(
          () => assert.fail('a too large answer was passed on'),
          (thrown: InstanceType<typeof OpenAI.APIError>) => thrown,
        );
        assert.equal(error.status, 502);
        assert.equal((error.error as { code?: string }).code, 'upstream_error');
        assert.equal(error.message, "502 The answer of the upstream provider 'fake-vllm' exceeded the gateway's limit of 1000 bytes (max_response_bytes).");
        // Far more than any socket buffer: the gateway stopped reading rather than taking it all.
        const request = upstream.requests.at(-1)!;
        if (bytes > 1_000_000) await eventually(() => (upstream.aborted.includes(request) ? true : undefined), 2000, 'the upstream answer to be cut');
      });
    }
  }

  test('a provider registered in the console takes its own limit', async () => {
    const { sluice, client: api } = await gateway(configFor(upstream.url));
    await createAccount(sluice.dataDir, 'admin', 'a long admin password', true);
    const browser = new ConsoleClient(sluice.url);
    const csrf = await browser.signIn('admin', 'a long admin password');
    const form = (await browser.get('/app/catalogue/providers/new')).text;
    for (const [name, placeholder] of [['response_timeout_ms', 120000], ['idle_timeout_ms', 60000], ['keep_alive_timeout_ms', 4000], ['max_response_bytes', 33554432]]) {
      assert.match(form, new RegExp(`name="${name}" type="number" value="" placeholder="${placeholder}"`), `${name}: its default shown`);
    }
    const saved = await browser.post('/app/catalogue/providers/new', { csrf, id: 'console-box', kind: 'openai', base_url: upstream.url, api_key: 'upstream-secret-credential', max_response_bytes: '1000' });
    assert.equal(saved.status, 303, saved.text);
    assert.equal((await browser.post('/app/catalogue/models/new', { csrf, id: 'console-model', provider: 'console-box', upstream_model: 'upstream-model', endpoints: 'completions' })).status, 303);
    upstream.behaviour = { largeAnswer: { bytes: 1001, contentLength: false } };
    await assert.rejects(api.completions.create({ model: 'console-model', prompt: 'x' }), /limit of 1000 bytes/);
    assert.match((await api.completions.create({ model: 'llama-8b', prompt: 'x' })).choices[0]!.text, /^x+$/, 'the file provider keeps the default');
  });

  test('a stream event that never ends is cut at the limit: a 502 naming it, the upstream cut, the failure in the ledger', async () => {
    // Bounded by the test, far past the limit and any socket buffer; were it read whole, the body
    // would then end with the event still open, which is not this failure.
    upstream.behaviour = { endlessEvent: { bytes: 16 * 1024 * 1024 } };
    const failure = await (async () => {
      for await (const _ of await client.completions.create({ model: 'llama-8b', prompt: 'x', stream: true })) assert.fail('an event came out of an endless one');
    })().then(
      () => assert.fail('the stream ended without an error'),
      (thrown: unknown) => thrown,
    );
    assert.ok(failure instanceof OpenAI.APIError, String(failure));
    assert.equal(failure.status, 502);
    assert.equal((failure.error as { code?: string }).code, 'upstream_error');
    assert.equal(failure.message, "502 The upstream provider 'fake-vllm' sent a stream event larger than the gateway's limit of 1000 characters (max_response_bytes).");
    const request = upstream.requests.at(-1)!;
    await eventually(() => (upstream.aborted.includes(request) ? true : undefined), 2000, 'the upstream stream to be cut');
    const row = await eventually(async () => (await sluice.ledger()).find((entry) => entry.request_id === request.headers['x-request-id']), 5000, 'the ledger row');
    assert.equal(row.status, 502);
    assert.equal(row.error_kind, 'upstream_error');
  });

  test('streams are not capped: they are passed on as they come, never held whole', async () => {
    upstream.behaviour = {};
    let text = '';
    let bytes = 0;
    for await (const chunk of await client.completions.create({ model: 'llama-8b', prompt: 'x', max_tokens: 16, stream: true })) {
      text += chunk.choices[0]?.text ?? '';
      bytes += JSON.stringify(chunk).length;
    }
    assert.equal(text, WORDS.join(''));
    assert.ok(bytes > 1000);
  });
});

describe('time limits', () => {
  test('the defaults are those docs/configuration.md and the example configuration state', () => {
    const expected = { connect_timeout_ms: 10_000, response_timeout_ms: 120_000, idle_timeout_ms: 60_000, keep_alive_timeout_ms: 4_000, max_response_bytes: 32 * 1024 * 1024 };
    const [provider] = parseConfig('providers: [{ id: p, kind: openai, base_url: "http://127.0.0.1:1/v1" }]', 'test').providers;
    const page = readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8').split('\n');
    const example = readFileSync(new URL('../sluice.example.yaml', import.meta.url), 'utf8');
    for (const [field, value] of Object.entries(expected)) {
      assert.equal(provider![field as keyof typeof expected], value, `${field}: the default applied`);
      // The configuration page's table of provider fields: | `field` | default | what it is |
      const row = page.find((line) => line.startsWith(`| \`${field}\` |`));
      assert.equal(row?.split('|')[2]!.trim().split(' ')[0], String(value), `${field}: the documented default`);
      assert.match(example, new RegExp(`# ${field}: ${value} `), `${field}: sluice.example.yaml's default`);
    }
  });

  describe('a stalled upstream is given up on when the configured limit passes', () => {
    let upstream: FakeUpstream;
    let sluice: RunningSluice;
    let key: string;
    before(async () => {
      upstream = await fakeOpenAI();
      ({ sluice } = await gateway(providerOptions(upstream.url, 'response_timeout_ms: 300\n    idle_timeout_ms: 300')));
      ({ key } = await createKey(sluice.dataDir, 'timeouts'));
    });
    const ask = async (stream: boolean) => {
      const startedAt = Date.now();
      const response = await fetch(`${sluice.url}/v1/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'llama-8b', prompt: 'x', max_tokens: 5, stream }),
      });
      return { status: response.status, text: await response.text(), seconds: (Date.now() - startedAt) / 1000 };
    };

    // undici times headers and bodies with its coarse timers (about 1 s resolution), so a 300 ms
    // limit fires after about a second; well before the upstream's 5 s is what shows it was applied.
    const GIVEN_UP_WITHIN_S = 3;

    test('no response headers within response_timeout_ms: a 504', async () => {
      upstream.behaviour = { headerDelayMs: 5000 };
      const { status, text, seconds } = await ask(false);
      assert.equal(status, 504);
      assert.equal(JSON.parse(text).error.code, 'upstream_timeout');
      assert.ok(seconds < GIVEN_UP_WITHIN_S, `answered after ${seconds} s`);
    });

    test('a stream silent for idle_timeout_ms: an error event after what came', async () => {
      upstream.behaviour = { tokenDelayMs: 5000 };
      const { status, text, seconds } = await ask(true);
      assert.equal(status, 200);
      assert.match(text, /^data: \{"id":"cmpl-/, 'the first chunk was passed on');
      assert.match(text, /data: \{"error":\{[^\n]*"code":"upstream_timeout"/);
      assert.ok(seconds < GIVEN_UP_WITHIN_S, `ended after ${seconds} s`);
    });
  });
});
