/**
 * The one OAuth token request both token flows make, against an issuer on 127.0.0.1 that answers as
 * told: a token and its lifetime, refusals named by the flow, what is retryable, and an issuer that
 * sends too much or nothing at all.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { GatewayError } from '../../../src/core/errors.js';
import { CredentialUnavailable, requestToken } from '../../../src/providers/auth/token-endpoint.js';

let answer: (res: import('node:http').ServerResponse) => void = () => undefined;
let forms: string[] = [];
let server: Server;
let url: string;

before(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      forms.push(body);
      answer(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
});

after(() => {
  server.closeAllConnections();
  server.close();
});

const json = (status: number, body: unknown) => (res: import('node:http').ServerResponse) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
const endpoint = (timeoutMs = 2000) => ({ providerId: 'p', url, issuer: 'The issuer', addressSetting: 'authority', timeoutMs });
const refused = (_r: unknown, said: string) => new CredentialUnavailable('upstream_auth_failed', `refused (${said})`, { upstreamFailure: 401 });
const ask = (timeoutMs?: number) => requestToken(endpoint(timeoutMs), new URLSearchParams({ grant_type: 'client_credentials', client_secret: 'the-client-secret' }), 3600, () => ['the-client-secret'], refused);
const failureOf = (promise: Promise<unknown>) => promise.then(() => assert.fail('no failure'), (error: unknown) => error as GatewayError);

describe('requestToken', () => {
  test('a token and its lifetime, in seconds as a number or a string, or the default; the form as given', async () => {
    forms = [];
    answer = json(200, { access_token: 'tok', expires_in: 299, token_type: 'Bearer' });
    assert.deepEqual(await ask(), { token: 'tok', lifetimeMs: 299_000 });
    answer = json(200, { access_token: 'tok', expires_in: '3599' });
    assert.deepEqual(await ask(), { token: 'tok', lifetimeMs: 3_599_000 });
    answer = json(200, { access_token: 'tok' });
    assert.deepEqual(await ask(), { token: 'tok', lifetimeMs: 3_600_000 });
    assert.equal(forms[0], 'grant_type=client_credentials&client_secret=the-client-secret');
  });

  test('a 4xx is the flow’s refusal, with the issuer’s words (first line, capped, secrets redacted)', async () => {
    answer = json(400, { error: 'invalid_client', error_description: `AADSTS7000215: Invalid client secret the-client-secret ${'x'.repeat(5000)}\nTrace ID: 1`, error_codes: [7000215] });
    const error = await failureOf(ask());
    assert.ok(error instanceof CredentialUnavailable && error.kind === 'upstream_auth_failed');
    assert.match(error.message, /^refused \(HTTP 400, invalid_client: AADSTS7000215: Invalid client secret \[redacted\] x+\)$/);
    assert.ok(error.message.length < 400, `${error.message.length} characters`);
    assert.ok(!error.message.includes('Trace ID'));
  });

  test('a 5xx or 429 is retryable for routing; 200 without a token is a credential not had', async () => {
    for (const status of [429, 500, 503]) {
      answer = json(status, { error: 'temporarily_unavailable' });
      const error = await failureOf(ask());
      assert.ok(!(error instanceof CredentialUnavailable));
      assert.equal(error.kind, 'upstream_error');
      assert.equal(error.upstreamFailure, status);
    }
    answer = json(200, { token_type: 'Bearer' });
    const error = await failureOf(ask());
    assert.ok(error instanceof CredentialUnavailable && /answered without an access token/.test(error.message));
  });

  test('an answer larger than a token answer can be is not read past 64 KiB', async () => {
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = ' '.repeat(64 * 1024);
      let sent = 0;
      const more = (): void => {
        while (sent < 1024 && res.write(chunk)) sent++;
        if (sent < 1024) res.once('drain', more);
        else res.end();
      };
      more();
    };
    const error = await failureOf(ask());
    assert.ok(error instanceof CredentialUnavailable, String(error));
  });

  test('an issuer that does not answer in time is a timeout, retryable; one not listening is unreachable', async () => {
    answer = () => undefined;
    const error = await failureOf(ask(200));
    assert.equal(error.kind, 'upstream_timeout');
    assert.equal(error.upstreamFailure, 'timeout');
    assert.match(error.message, /for a token: The issuer at http:\/\/127\.0\.0\.1:\d+\/token \(authority\) did not answer/);
    const closed = await failureOf(requestToken({ ...endpoint(), url: 'http://127.0.0.1:9/token' }, new URLSearchParams(), 3600, () => [], refused));
    assert.equal(closed.kind, 'upstream_unreachable');
  });
});
