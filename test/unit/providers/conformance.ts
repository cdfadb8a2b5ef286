/**
 * One conformance suite for every provider adapter (the `Provider` seam of
 * src/generation/provider.ts), run by each adapter's test file against recorded vendor answers: a
 * replay upstream on 127.0.0.1 serves the recorded response and records the request, and the
 * suite checks what went upstream (method, path, headers, body against a stored snapshot), what came
 * back (the canonical GenerationResult or StreamPart sequence), how failures became GatewayErrors,
 * what a relay passed through, and how model lists were paged. The cases an adapter declares name
 * its fixtures and its exact expectations; the assertions, the stream contract and the answers a
 * shared scenario must give are the same for every adapter.
 *
 * `SLUICE_UPDATE_SNAPSHOTS=1` rewrites the expected-request snapshots from what the adapters send:
 * review the diff against the vendor's documentation before committing it.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { modelFromConfig, type CatalogueModel } from '../../../src/catalogue/catalogue.js';
import type { UpstreamModel } from '../../../src/catalogue/upstream-model.js';
import { modelSchema, providerSchema, type ProviderConfig } from '../../../src/config/config-file.js';
import { GatewayError, type ErrorKind, type UpstreamFailureCondition } from '../../../src/core/errors.js';
import type { Finish, FinishReason, GeneratedChoice, GenerationRequest, GenerationResult, StreamPart, Usage } from '../../../src/generation/model.js';
import type { GenerationCall, ProviderAdapter, RelayCall, WireOperation } from '../../../src/generation/provider.js';
import { ModelListingError } from '../../../src/providers/model-listing.js';
import { createProvider } from '../../../src/providers/registry.js';
import type { RecordedRequest } from '../../fakes/fake-server.js';
import { readRecordedResponse, sseJsonPayloads, startReplayUpstream, withJsonBody, type RecordedResponse, type ReplayUpstream } from './replay-upstream.js';
import { SCENARIOS, type ScenarioAnswer, type ScenarioName } from './scenarios.js';

export type ProviderKind = ProviderConfig['kind'];

/** Stands for a `created` the adapter stamped itself: a Unix time within the test's run. */
export const NOW = -1;
/** Stands for a tool-call id the adapter made (Gemini gives calls none): `call_` and 24 base-62 characters, unique in the answer. */
export const GENERATED_ID = '<generated call id>';

/** What a GatewayError must carry. Fields left out must be unset on the error. */
export interface ExpectedError {
  readonly kind: ErrorKind;
  readonly status: number;
  readonly upstreamFailure: UpstreamFailureCondition;
  readonly retryAfter?: string;
  readonly type?: string;
  readonly code?: string;
  /** Words the message must hold (an upstream's own message, passed on for a rejected request). */
  readonly message?: RegExp;
}

/** A model entry's fields a case changes (another upstream model, an output cap, another upstream API). */
export interface ModelOverrides {
  readonly upstream_model?: string;
  readonly max_output_tokens?: number;
  readonly upstream_api?: 'completions' | 'chat' | 'responses';
}

interface CallCase {
  /** The case's name, and the stem of its fixtures: `responses/<name>.http`, `requests/<name>.json`. */
  readonly name: string;
  /** A shared scenario: its request, and the answer every adapter must give from its own wire. */
  readonly scenario?: ScenarioName;
  /** A request of this adapter's own (instead of a scenario's). */
  readonly request?: GenerationRequest;
  readonly choices?: number;
  readonly model?: ModelOverrides;
  /** A known mapping bug: the case runs, and is reported as a todo until the adapter passes it. */
  readonly todo?: string;
}

export interface GenerateCase extends CallCase {
  readonly expect: GenerationResult;
}

export interface StreamCase extends CallCase {
  /** Every part, in order: the stream contract's sequence for this recorded stream. */
  readonly expect: readonly StreamPart[];
  /** The GatewayError the stream throws after those parts. */
  readonly error?: ExpectedError;
}

/** Why an upstream failed, as the caller must see it: the kind of GatewayError every adapter makes of it. */
export type ErrorSituation = keyof typeof SITUATION_KINDS;

const SITUATION_KINDS = {
  invalid_request: 'upstream_rejected_request',
  bad_credential: 'upstream_auth_failed',
  no_permission: 'upstream_auth_failed',
  not_found: 'upstream_rejected_request',
  too_large: 'upstream_rejected_request',
  rate_limited: 'upstream_rate_limited',
  server_error: 'upstream_error',
  overloaded: 'upstream_overloaded',
  unreadable: 'upstream_error',
  /** The upstream says the gateway's configuration is wrong (an Azure deployment or API version it does not have): the operator's 502. */
  misconfigured: 'upstream_error',
} as const satisfies Record<string, ErrorKind>;

export interface ErrorCase {
  /** The stem of `responses/<name>.http`. */
  readonly name: string;
  readonly situation: ErrorSituation;
  readonly expect: Omit<ExpectedError, 'kind'>;
  readonly todo?: string;
}

/** The finish reasons of one recorded whole answer, its reason swapped for each of the vendor's documented values. */
export interface FinishTable {
  readonly response: string;
  readonly scenario: ScenarioName;
  readonly set: (body: Record<string, any>, raw: string) => void;
  /** Each raw reason and its finish; `why` joins the test's name (a judgement call), `todo` marks a known mapping bug. */
  readonly cases: readonly (readonly [raw: string, finish: Finish, more?: { readonly why?: string; readonly todo?: string }])[];
}

export interface RelayCase {
  /** The stem of `responses/<name>.http` and `requests/<name>.json`. */
  readonly name: string;
  readonly operation: WireOperation;
  readonly stream: boolean;
  readonly body: Readonly<Record<string, unknown>>;
  readonly headers?: Readonly<Record<string, string>>;
  readonly model?: ModelOverrides;
  /** Provider configuration beyond the key (an operator's `anthropic-beta`, Azure's allow_data_sources). */
  readonly provider?: { readonly headers?: Record<string, string>; readonly allow_data_sources?: boolean };
  /** The stream fails after this many of the recorded events, with this error. */
  readonly error?: ExpectedError & { readonly afterEvents: number };
  readonly todo?: string;
}

export interface ListModelsCase {
  readonly name: string;
  /** `responses/<page>.http`, one per request, in order. */
  readonly pages: readonly string[];
  /** The path of each request, query included. */
  readonly paths: readonly string[];
  readonly expect?: readonly UpstreamModel[];
  readonly error?: ExpectedError;
}

export interface AdapterUnderTest {
  readonly kind: ProviderKind;
  /** The folder of its fixtures under fixtures/providers (default: the kind; a cloud serving two vendors' wires has one per wire). */
  readonly fixtures?: string;
  /**
   * Provider configuration in place of `api_key`, for upstreams whose credential is made rather than
   * configured (a cloud's service account); `apiKey` is then what the credential header carries.
   */
  readonly provider?: () => Readonly<Record<string, unknown>>;
  /** The path the vendor's API lives under, as the provider's base_url names it (`/v1`, `/v1beta`). */
  readonly basePath: string;
  readonly apiKey: string;
  /** The one header that may carry the key, and its value. */
  readonly credential: readonly [header: string, value: string];
  /**
   * For an upstream that signs each request instead of sending a key (AWS SigV4): the provider's
   * credential fields in place of `api_key`, a check of each request's credential in place of
   * `credential`'s (`apiKey` is then the secret that must appear nowhere), and the headers that
   * change with every request (a date, a signature), each written to the snapshot as `mask` makes it.
   */
  readonly signed?: {
    readonly fields: Readonly<Record<string, unknown>>;
    readonly check: (sent: RecordedRequest) => void;
    readonly mask: Readonly<Record<string, (value: string) => string>>;
  };
  /** A relayed stream's events read from the recorded body, for upstreams whose streams are not server-sent events. */
  readonly streamPayloads?: (body: Buffer) => unknown[];
  /** The upstream model of the catalogue entry every case uses, unless it overrides it. */
  readonly upstreamModel: string;
  readonly generate: readonly GenerateCase[];
  readonly stream: readonly StreamCase[];
  readonly finishes: FinishTable;
  readonly errors: readonly ErrorCase[];
  /** Which caller operations the adapter takes untouched, for which models. */
  readonly relays: readonly (readonly [operation: WireOperation, model: ModelOverrides, relays: boolean])[];
  readonly relay: readonly RelayCase[];
  readonly listModels: readonly ListModelsCase[];
}

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'providers');
const UPDATE_SNAPSHOTS = process.env.SLUICE_UPDATE_SNAPSHOTS === '1';
/** Passed on every call, so every snapshot shows it forwarded. */
const TRACE_HEADERS = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' };
/** Headers of the transport, not of the adapter: left out of the snapshots. */
const TRANSPORT_HEADERS = new Set(['host', 'connection', 'content-length', 'transfer-encoding']);

export function conformanceSuite(adapter: AdapterUnderTest): void {
  const fixtures = join(FIXTURES, adapter.fixtures ?? adapter.kind);
  const response = (name: string): RecordedResponse => readRecordedResponse(join(fixtures, 'responses', `${name}.http`));
  let upstream: ReplayUpstream;
  let provider: ProviderAdapter;
  const extraProviders: ProviderAdapter[] = [];

  const newProvider = (more: { headers?: Record<string, string> } = {}): ProviderAdapter => {
    const base_url = `${upstream.url}${adapter.basePath}`;
    const credentials = adapter.signed !== undefined ? adapter.signed.fields : adapter.provider !== undefined ? adapter.provider() : { api_key: adapter.apiKey };
    const config: ProviderConfig = { ...providerSchema.parse({ id: `${adapter.kind}-replay`, kind: adapter.kind, base_url, ...credentials, ...more }), base_url };
    return createProvider(config);
  };
  const catalogueModel = (overrides: ModelOverrides = {}): CatalogueModel =>
    modelFromConfig(modelSchema.parse({ id: 'assistant', provider: `${adapter.kind}-replay`, upstream_model: adapter.upstreamModel, endpoints: ['chat'], ...overrides }));
  const callOf = (c: CallCase): GenerationCall => ({
    request: requestOf(c),
    model: catalogueModel(c.model),
    requestId: `req_${c.name}`,
    signal: new AbortController().signal,
    choices: c.choices ?? 1,
    traceHeaders: TRACE_HEADERS,
  });

  /** The one request the case sent, checked against its snapshot and for the credential's place. */
  const assertSent = (snapshot: string): void => {
    assert.equal(upstream.requests.length, 1, 'one request upstream');
    const sent = upstream.requests[0]!;
    assertCredential(adapter, sent);
    assertSnapshot(join(fixtures, 'requests', `${snapshot}.json`), sent, adapter.signed?.mask ?? {});
  };

  describe(`${adapter.kind} adapter`, () => {
    before(async () => {
      upstream = await startReplayUpstream();
      provider = newProvider();
      assert.equal(provider.kind, adapter.kind);
    });
    after(async () => {
      await Promise.all([provider.close(), ...extraProviders.map((p) => p.close())]);
      await upstream.close();
    });

    describe('generate', () => {
      for (const c of adapter.generate) {
        test(c.name, { todo: c.todo }, async () => {
          upstream.serve(response(c.name));
          const window = timeWindow();
          const call = callOf(c);
          const result = await provider.generate(call);
          window.end();
          assertSent(c.name);
          assert.equal(result.choices.length, call.choices, 'one choice per choice asked for');
          result.choices.forEach((choice, i) => assert.equal(choice.index, i, 'choices in index order'));
          if (c.scenario !== undefined) assertAnswer(answerOfChoice(result.choices[0]!, result.usage), SCENARIOS[c.scenario].answer);
          assert.deepStrictEqual(normalised(result, c.expect, window), c.expect);
        });
      }
    });

    describe('stream', () => {
      for (const c of adapter.stream) {
        test(c.name, { todo: c.todo }, async () => {
          upstream.serve(response(c.name));
          const window = timeWindow();
          const call = callOf(c);
          const parts: StreamPart[] = [];
          let failure: unknown;
          try {
            for await (const part of await provider.stream(call)) parts.push(part);
          } catch (error) {
            failure = error;
          }
          window.end();
          assertSent(c.name);
          if (c.error === undefined) assert.equal(failure, undefined, `the stream ended cleanly (${String(failure)})`);
          else assertGatewayError(failure, c.error);
          assertStreamContract(parts, call.choices, c.error === undefined);
          if (c.scenario !== undefined && c.error === undefined) assertAnswer(answerOfParts(parts), SCENARIOS[c.scenario].answer);
          assert.deepStrictEqual(normalised(parts, c.expect, window), c.expect);
        });
      }
    });

    describe('finish reasons', () => {
      const table = adapter.finishes;
      for (const [raw, finish, { why, todo } = {}] of table.cases) {
        test(`${raw} → ${finish.reason}${why === undefined ? '' : ` (${why})`}`, { todo }, async () => {
          upstream.serve(withJsonBody(response(table.response), (body) => table.set(body, raw)));
          const result = await provider.generate(callOf({ name: table.response, scenario: table.scenario }));
          assert.deepStrictEqual(result.choices[0]?.finish, finish);
        });
      }
    });

    describe('errors', () => {
      for (const c of adapter.errors) {
        const expected: ExpectedError = { kind: SITUATION_KINDS[c.situation], ...c.expect };
        // The text scenario's own calls, so that what went upstream is its snapshot.
        test(`${c.name}: generate`, { todo: c.todo }, async () => {
          upstream.serve(response(c.name));
          assertGatewayError(await rejection(provider.generate(callOf({ name: 'generate-text', scenario: 'text' }))), expected);
          assertSent('generate-text');
        });
        test(`${c.name}: stream`, { todo: c.todo }, async () => {
          upstream.serve(response(c.name));
          // Refused before the first part: the caller still gets an HTTP error status.
          assertGatewayError(await rejection(provider.stream(callOf({ name: 'stream-text', scenario: 'text' }))), expected);
          assertSent('stream-text');
        });
      }
    });

    describe('relay', () => {
      test('relays the operations it takes untouched, and no others', () => {
        for (const [operation, model, relays] of adapter.relays) {
          assert.equal(provider.relays(operation, catalogueModel(model)), relays, `${operation} ${JSON.stringify(model)}`);
        }
      });
      for (const c of adapter.relay) {
        test(c.name, { todo: c.todo }, async () => {
          const recorded = response(c.name);
          upstream.serve(recorded);
          let relaying = provider;
          if (c.provider !== undefined) extraProviders.push((relaying = newProvider(c.provider)));
          const call: RelayCall = {
            operation: c.operation,
            body: c.body,
            stream: c.stream,
            model: catalogueModel(c.model),
            requestId: `req_${c.name}`,
            signal: new AbortController().signal,
            ...(c.headers === undefined ? {} : { headers: c.headers }),
            traceHeaders: TRACE_HEADERS,
          };
          const answer = await relaying.relay(call);
          assert.equal(answer.stream, c.stream);
          if (!answer.stream) {
            assert.deepStrictEqual(answer.body, JSON.parse(recorded.body.toString('utf8')), 'the upstream body, as it came');
          } else {
            const events: unknown[] = [];
            let failure: unknown;
            try {
              for await (const event of answer.events) events.push(event);
            } catch (error) {
              failure = error;
            }
            const payloads = (adapter.streamPayloads ?? sseJsonPayloads)(recorded.body);
            if (c.error === undefined) {
              assert.equal(failure, undefined, `the relayed stream ended cleanly (${String(failure)})`);
              assert.deepStrictEqual(events, payloads, 'every upstream event, parsed, in order');
            } else {
              const { afterEvents, ...error } = c.error;
              assertGatewayError(failure, error);
              assert.deepStrictEqual(events, payloads.slice(0, afterEvents), 'the events before the failure, in order');
            }
          }
          assertSent(c.name);
        });
      }
    });

    describe('listModels', () => {
      for (const c of adapter.listModels) {
        test(c.name, async () => {
          upstream.serve(...c.pages.map(response));
          const listing = provider.listModels(new AbortController().signal);
          if (c.error !== undefined) {
            const failure = await rejection(listing);
            assertGatewayError(failure, c.error);
            // The page that failed is named, for the console and the log to show (never with the key).
            assert.ok(failure instanceof ModelListingError, 'a listing failure names its URL');
            assert.equal(failure.url, `${upstream.url}${c.paths.at(-1)}`);
            assert.ok(!failure.url.includes(adapter.apiKey));
          } else assert.deepStrictEqual(await listing, c.expect);
          assert.equal(upstream.unanswered(), 0, 'every page asked for');
          assert.deepStrictEqual(
            upstream.requests.map((r) => `${r.method} ${r.path}`),
            c.paths.map((path) => `GET ${path}`),
          );
          for (const sent of upstream.requests) assertCredential(adapter, sent);
        });
      }
    });

    describe('fixtures', () => {
      test('every recorded response is used by a case and has its source in README.md', () => {
        const readme = readFileSync(join(fixtures, 'README.md'), 'utf8');
        const used = new Set([
          ...[...adapter.generate, ...adapter.stream, ...adapter.relay].map((c) => c.name),
          ...adapter.errors.map((c) => c.name),
          ...adapter.listModels.flatMap((c) => c.pages),
          adapter.finishes.response,
        ]);
        for (const file of readdirSync(join(fixtures, 'responses'))) {
          const name = file.replace(/\.http$/, '');
          assert.ok(used.has(name), `${file} is used by a case`);
          assert.match(readme, new RegExp(`\`${name}\\.http\`[^\\n]*https?://`), `README.md names ${file} with a source URL on its line`);
        }
      });
    });
  });
}

function requestOf(c: CallCase): GenerationRequest {
  const request = c.request ?? (c.scenario === undefined ? undefined : SCENARIOS[c.scenario].request);
  if (request === undefined) throw new Error(`case ${c.name} has neither a scenario nor a request`);
  return request;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('expected a rejection');
}

function assertGatewayError(error: unknown, expected: ExpectedError): void {
  assert.ok(error instanceof GatewayError, `a GatewayError, not ${String(error)}`);
  const { message, ...fields } = expected;
  assert.deepStrictEqual(
    { kind: error.kind, status: error.status, upstreamFailure: error.upstreamFailure, retryAfter: error.retryAfter, type: error.type, code: error.code },
    { retryAfter: undefined, type: undefined, code: undefined, ...fields },
  );
  if (message !== undefined) assert.match(error.message, message);
}

/** The key goes in the vendor's one credential header and nowhere else: not in the path, another header or the body. */
function assertCredential(adapter: AdapterUnderTest, sent: RecordedRequest): void {
  const [header, value] = adapter.credential;
  if (adapter.signed !== undefined) adapter.signed.check(sent);
  else assert.equal(sent.headers[header], value, `the key in ${header}`);
  for (const [name, content] of Object.entries(sent.headers)) {
    if (name !== header) assert.ok(!String(content).includes(adapter.apiKey), `the key is not in header ${name}`);
  }
  assert.ok(!sent.path.includes(adapter.apiKey), 'the key is not in the URL');
  assert.ok(!JSON.stringify(sent.body ?? null).includes(adapter.apiKey), 'the key is not in the body');
}

function assertSnapshot(file: string, sent: RecordedRequest, mask: Readonly<Record<string, (value: string) => string>>): void {
  const headers = Object.fromEntries(
    Object.entries(sent.headers)
      .filter(([name]) => !TRANSPORT_HEADERS.has(name))
      .map(([name, value]) => [name, mask[name] === undefined ? value : mask[name](String(value))])
      .sort(([a], [b]) => String(a).localeCompare(String(b))),
  );
  const actual = { method: sent.method, path: sent.path, headers, body: sent.body ?? null };
  if (UPDATE_SNAPSHOTS) {
    writeFileSync(file, `${JSON.stringify(actual, null, 2)}\n`);
    return;
  }
  assert.ok(existsSync(file), `${file} exists (SLUICE_UPDATE_SNAPSHOTS=1 writes it)`);
  assert.deepStrictEqual(actual, JSON.parse(readFileSync(file, 'utf8')), `the request matches ${file}`);
}

interface TimeWindow {
  readonly from: number;
  to: number;
  end(): void;
}

function timeWindow(): TimeWindow {
  const window = { from: Math.floor(Date.now() / 1000), to: Infinity, end: () => (window.to = Math.ceil(Date.now() / 1000)) };
  return window;
}

/**
 * `actual` with the values that cannot be recorded replaced by the placeholders `expected` holds
 * there, once they are checked: a time the adapter stamped (NOW) and ids it made (GENERATED_ID).
 */
function normalised<T>(actual: T, expected: unknown, window: TimeWindow): T {
  const generated = new Set<string>();
  const walk = (a: unknown, e: unknown): unknown => {
    if (e === NOW && typeof a === 'number' && a >= window.from && a <= window.to) return NOW;
    if (e === GENERATED_ID && typeof a === 'string' && /^call_[0-9A-Za-z]{24}$/.test(a)) {
      assert.ok(!generated.has(a), `generated id ${a} is unique`);
      generated.add(a);
      return GENERATED_ID;
    }
    if (Array.isArray(a) && Array.isArray(e)) return a.map((item, i) => walk(item, e[i]));
    if (a !== null && e !== null && typeof a === 'object' && typeof e === 'object' && !Array.isArray(a)) {
      return Object.fromEntries(Object.entries(a).map(([key, value]) => [key, walk(value, (e as Record<string, unknown>)[key])]));
    }
    return a;
  };
  return walk(actual, expected) as T;
}

/**
 * The normalised stream's rules (src/generation/model.ts): `start` first and once; per choice, a
 * tool call's start before its fragments and end, indexes from 0 in order of starting, nothing after
 * the choice's `finish`; a stream that ended cleanly finishes every choice once and ends with at most
 * one `usage`.
 */
export function assertStreamContract(parts: readonly StreamPart[], choices: number, endedCleanly: boolean): void {
  assert.equal(parts[0]?.type, 'start', 'start comes first');
  assert.equal(parts.filter((p) => p.type === 'start').length, 1, 'one start');
  const finished = new Set<number>();
  const started = new Map<number, number>();
  const endedCalls = new Set<string>();
  parts.forEach((part, at) => {
    if (part.type === 'start') return;
    if (part.type === 'usage') {
      assert.equal(at, parts.length - 1, 'usage comes last');
      return;
    }
    assert.ok(part.choice >= 0 && part.choice < choices, `choice ${part.choice} was asked for`);
    assert.ok(!finished.has(part.choice), `nothing for choice ${part.choice} after its finish (${part.type})`);
    switch (part.type) {
      case 'finish':
        finished.add(part.choice);
        return;
      case 'tool_call_start': {
        const next = started.get(part.choice) ?? 0;
        assert.equal(part.index, next, 'tool calls counted from 0 in the order they began');
        started.set(part.choice, next + 1);
        return;
      }
      case 'tool_call_delta':
      case 'tool_call_end': {
        assert.ok(part.index < (started.get(part.choice) ?? 0), `tool call ${part.index} began before its ${part.type}`);
        const key = `${part.choice}/${part.index}`;
        assert.ok(!endedCalls.has(key), `nothing for tool call ${key} after its end`);
        if (part.type === 'tool_call_end') endedCalls.add(key);
        return;
      }
      default:
        return;
    }
  });
  if (endedCleanly) assert.equal(finished.size, choices, 'every choice finished');
}

interface Answer {
  readonly text: string;
  readonly toolCalls: readonly { readonly id: string; readonly name: string; readonly arguments: string }[];
  readonly finish: FinishReason | undefined;
  readonly usage: Usage | null;
}

export function answerOfChoice(choice: GeneratedChoice, usage: Usage | null): Answer {
  let text = '';
  const toolCalls: { id: string; name: string; arguments: string }[] = [];
  for (const part of choice.content) {
    if (part.type === 'text') text += part.text;
    else if (part.type === 'tool_call') toolCalls.push({ id: part.id, name: part.name, arguments: part.arguments });
  }
  return { text, toolCalls, finish: choice.finish.reason, usage };
}

/** Choice 0 of a stream put back together: its text joined, each tool call's argument fragments joined. */
export function answerOfParts(parts: readonly StreamPart[]): Answer {
  let text = '';
  const toolCalls: { id: string; name: string; arguments: string }[] = [];
  let finish: FinishReason | undefined;
  let usage: Usage | null = null;
  for (const part of parts) {
    if (part.type === 'usage') usage = part.usage;
    if (!('choice' in part) || part.choice !== 0) continue;
    if (part.type === 'text') text += part.text;
    else if (part.type === 'tool_call_start') toolCalls[part.index] = { id: part.id, name: part.name, arguments: '' };
    else if (part.type === 'tool_call_delta') toolCalls[part.index]!.arguments += part.arguments;
    else if (part.type === 'finish') finish = part.finish.reason;
  }
  return { text, toolCalls, finish, usage };
}

/** What a shared scenario's answer must be, whichever vendor's wire it came through. */
export function assertAnswer(answer: Answer, expected: ScenarioAnswer): void {
  if (expected.text !== undefined) assert.equal(answer.text, expected.text, 'the scenario answer text');
  if (expected.json !== undefined) assert.deepStrictEqual(JSON.parse(answer.text), expected.json, 'the scenario answer JSON');
  assert.deepStrictEqual(
    answer.toolCalls.map((call) => ({ name: call.name, arguments: JSON.parse(call.arguments) as unknown })),
    expected.toolCalls ?? [],
    'the scenario tool calls, arguments whole',
  );
  for (const call of answer.toolCalls) assert.ok(call.id !== '', 'every tool call has an id');
  assert.equal(new Set(answer.toolCalls.map((call) => call.id)).size, answer.toolCalls.length, 'tool call ids are unique');
  assert.equal(answer.finish, expected.finish, 'the scenario finish reason');
  const usage = answer.usage;
  assert.ok(usage !== null, 'usage reported');
  assert.ok(usage.input >= usage.cachedInput + usage.cacheWrite, 'input counts its cached part');
  assert.ok(usage.output >= usage.reasoning, 'output counts its reasoning');
  if (expected.cachedInput) assert.ok(usage.cachedInput > 0, 'cached input reported');
  if (expected.reasoning) assert.ok(usage.reasoning > 0, 'reasoning tokens reported');
}
