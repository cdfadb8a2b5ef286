import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { CatalogueModel } from '../../../src/catalogue/catalogue.js';
import { GatewayError, type UpstreamFailureCondition } from '../../../src/core/errors.js';
import { embedAll, generateAll, streamAll } from '../../../src/generation/fan-out.js';
import type { Usage } from '../../../src/generation/model.js';
import type { Answer, ProviderCall } from '../../../src/generation/operation.js';
import type { Provider } from '../../../src/generation/provider.js';
import { writeReply, type Written } from '../../../src/pipeline/write.js';
import { MemorySink } from '../support/memory-sink.js';
import { FIXTURES, matchesSnapshot } from './support/fixtures.js';
import { framesOf } from './support/framing.js';
import { reportedUsage, resultOf, SCENARIOS, type Scenario } from './support/scenarios.js';
import { ScriptedProvider } from './support/scripted-provider.js';
import { translatingModel } from './support/subjects.js';
import { WRITER_SUBJECTS, type Variant, type WireRequestFixture, type WriterSubject } from './support/writer-subjects.js';

/**
 * What each caller dialect writes for the same canonical answers (support/scenarios.ts), whole and
 * streamed, through the operation's own `plan` and `answer` with a scripted upstream, written by
 * the pipeline's write stage (`writeReply`) to an in-memory sink: the exact bytes a caller
 * receives, compared with reviewed snapshots in test/unit/fixtures/dialects/writers/<operation>/
 * (see the README there for where each documented shape comes from). Random ids and the current
 * time are the only things replaced before comparing.
 */

const PRINCIPAL = { keyId: 'key_1', accountId: 'acct_1', accountName: 'acme', allowedModels: null, keyLimits: null, accountLimits: null };

/** What a caller received: the status, the headers the dialect set, and the body's exact bytes. */
interface Received {
  readonly status: number | undefined;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** What ended the request before its first byte (the route would render it), or a reply left unended (a bug). */
  readonly thrown: unknown;
}

/** What the meter stage is given of the write: the usage, whether Sluice counted it, the first byte, a failure after it. */
interface Meter {
  readonly usage: Usage | null;
  readonly tokensCounted: boolean;
  readonly firstByteAt: number | null;
  readonly failure: { readonly status: number; readonly kind: string; readonly upstreamFailure?: UpstreamFailureCondition | undefined } | null;
}

/** The response headers a dialect sets (not Node's own: date, connection, transfer-encoding, …). */
const DIALECT_HEADERS = ['content-type', 'cache-control', 'x-accel-buffering'];

interface Served {
  readonly received: Received;
  readonly meter: Meter;
  readonly request: WireRequestFixture;
  readonly provider: ScriptedProvider;
  readonly startedAt: number;
  readonly endedAt: number;
}

/** An upstream's own answer in the operation's wire, from the vendor's documentation (writers/<operation>/relay.upstream.json). */
interface RelayFixture {
  readonly about: string;
  readonly source: string;
  readonly whole: Readonly<Record<string, unknown>>;
  readonly events: readonly Readonly<Record<string, unknown>>[];
}

function relayFixture(subject: WriterSubject): RelayFixture {
  return JSON.parse(readFileSync(join(FIXTURES, 'writers', subject.folder, 'relay.upstream.json'), 'utf8')) as RelayFixture;
}

/** A relayed stream as the upstream ends it: whole, failing part way or at once, or with nothing at all. */
interface RelayCase {
  readonly name: string;
  readonly about: string;
  /** How many of the fixture's events come (all, if undefined). */
  readonly events?: number;
  readonly failure?: GatewayError;
}

const RELAY_FAILURE = new GatewayError('upstream_error', "The upstream provider 'scripted' failed: connection reset.", { upstreamFailure: 'connect_error' });

const RELAY_CASES: readonly RelayCase[] = [
  { name: 'relay', about: 'an upstream of the same dialect, its own answer passed on under the public model id' },
  { name: 'relay-failing', about: 'the upstream fails after its first two events: the caller gets its dialect’s error event', events: 2, failure: RELAY_FAILURE },
  { name: 'relay-failing-at-once', about: 'the upstream fails before its first event: nothing is written, so that routing can try again', events: 0, failure: RELAY_FAILURE },
  { name: 'relay-empty', about: 'the upstream ends its stream with no event at all', events: 0 },
];

/**
 * Runs the operation for the scenario (or the relayed answer) as the pipeline does, the provider
 * called directly (no routing, so a stream is not held until its first content), and reads what
 * the caller gets.
 */
async function serve(subject: WriterSubject, variant: Variant, scenario: Scenario | RelayCase): Promise<Served> {
  const relay = 'parts' in scenario ? undefined : scenario;
  const base = subject.request(relay === undefined ? (scenario as Scenario) : undefined, variant.stream);
  const request = variant.adjust?.(base) ?? base;
  const wireRequest = { headers: request.headers, path: request.path, query: new URLSearchParams(request.query) };
  const { operation } = subject;
  let parsed = operation.parse(structuredClone(request.body), wireRequest);
  if (operation.prepare !== undefined) parsed = await operation.prepare(parsed, PRINCIPAL);
  let provider: ScriptedProvider;
  if (relay !== undefined) {
    const upstream = relayFixture(subject);
    const events = upstream.events.slice(0, relay.events ?? upstream.events.length);
    provider = new ScriptedProvider(subject.relayKind, { kind: 'relayed', operation: subject.name, whole: upstream.whole, events, ...(relay.failure === undefined ? {} : { failure: relay.failure }) });
  } else {
    const s = scenario as Scenario;
    provider = new ScriptedProvider('anthropic', { kind: 'translated', result: resultOf(s), parts: s.parts, ...(s.failure === undefined ? {} : { failure: s.failure }) });
  }
  const model = translatingModel(parsed.model, 'anthropic');
  const startedAt = Math.floor(Date.now() / 1000);
  const sink = new MemorySink();
  let written: Written | undefined;
  let thrown: unknown;
  try {
    const call = operation.plan(parsed, { model, provider });
    const answer = await answerOf(provider, call, model, sink.signal);
    const reply = operation.answer(parsed, answer, { model, provider, call, sink });
    const request = parsed;
    written = await writeReply(reply, sink, (generated) => operation.countUsage(request, generated));
    thrown = written.thrown;
  } catch (error) {
    thrown = error;
  }
  // A reply that forgot to end would hang the caller.
  if (thrown === undefined && !sink.ended) thrown = new Error('the response was not ended');
  const failure = written?.failure;
  const meter: Meter = {
    usage: written?.usage ?? null,
    tokensCounted: written?.counted ?? false,
    firstByteAt: written?.firstByteAt ?? null,
    failure: failure === undefined ? null : { status: failure.status, kind: failure.kind, upstreamFailure: failure.upstreamFailure },
  };
  return { received: receivedBy(sink, thrown), meter, request, provider, startedAt, endedAt: Math.ceil(Date.now() / 1000) };
}

/** What the invoke stage brings back for the call an operation planned, the provider called directly. */
async function answerOf(provider: Provider, call: ProviderCall, model: CatalogueModel, signal: AbortSignal): Promise<Answer> {
  const target = { model, requestId: 'req_1', signal };
  switch (call.kind) {
    case 'none':
      return { kind: 'none' };
    case 'generate':
      return call.stream ? { kind: 'generating', parts: await streamAll(provider, call.subCalls, target) } : { kind: 'generated', result: await generateAll(provider, call.subCalls, target) };
    case 'relay': {
      const relayed = await provider.relay({ ...call, ...target });
      return relayed.stream ? { kind: 'relaying', events: relayed.events } : { kind: 'relayed', body: relayed.body };
    }
    case 'embed':
      return { kind: 'embedded', result: await embedAll(provider, call.batches, call.encoding, target) };
    case 'transfer':
      return { kind: 'transferred', transferred: await provider.transfer({ ...call, ...target }) };
  }
}

function receivedBy(sink: MemorySink, thrown: unknown): Received {
  const headers: Record<string, string> = {};
  for (const name of DIALECT_HEADERS) {
    const value = sink.header(name);
    if (value !== undefined) headers[name] = value;
  }
  for (const [name, value] of sink.headers()) if (name.startsWith('x-sluice-')) headers[name] = value;
  return { status: sink.status, headers, body: sink.body, thrown };
}

/**
 * Random ids become `<prefix>{id:N}`, numbered in order of first appearance (so an id that must
 * repeat, an item's across its events, still has to); Sluice's own timestamps become `{now}`, once
 * checked to be the current time.
 */
function normalised(text: string, startedAt: number, endedAt: number): string {
  const ids = new Map<string, number>();
  return text
    .replace(/"((?:chatcmpl-|cmpl-|msg_|resp_|rs_|fc_)?)([0-9A-Za-z]{24})"/g, (_, prefix: string, id: string) => {
      if (!ids.has(id)) ids.set(id, ids.size + 1);
      return `"${prefix}{id:${ids.get(id)}}"`;
    })
    .replace(/"(created|created_at)":(\d+)/g, (whole, name: string, value: string) => {
      const seconds = Number(value);
      if (seconds < startedAt || seconds > endedAt) return whole;
      return `"${name}":"{now}"`;
    });
}

function snapshotOf(subject: WriterSubject, served: Served, variant: Variant): string {
  const { received, meter, request } = served;
  const lines = [`${subject.name}: POST ${request.path}${request.query === '' ? '' : `?${request.query}`}`, `request: ${JSON.stringify(request.body)}`];
  for (const call of served.provider.relayedCalls) lines.push(`relayed upstream: ${JSON.stringify({ operation: call.operation, stream: call.stream, headers: call.headers, body: call.body })}`);
  lines.push(`meter: ${JSON.stringify({ usage: meter.usage, tokensCounted: meter.tokensCounted, failure: meter.failure })}`);
  if (received.thrown !== undefined) {
    const error = received.thrown as GatewayError;
    lines.push(`thrown before the first byte: ${error.kind} ${error.status} ${error.message}`, '');
    return lines.join('\n');
  }
  lines.push(`status: ${received.status}`);
  for (const [name, value] of Object.entries(received.headers)) lines.push(`${name}: ${value}`);
  const body = normalised(received.body, served.startedAt, served.endedAt);
  return `${lines.join('\n')}\n\n${variant.stream ? body : `${JSON.stringify(JSON.parse(body), null, 2)}\n`}`;
}

function applies(subject: WriterSubject, scenario: Scenario, variant: Variant): boolean {
  if (scenario.needs !== undefined && !subject.can.has(scenario.needs)) return false;
  return variant.only === undefined || variant.only.includes(scenario.name);
}

for (const subject of WRITER_SUBJECTS) {
  // Each test has its own upstream, meter and response: they run side by side, as requests do.
  describe(`${subject.name} writes`, { concurrency: true }, () => {
    for (const variant of subject.variants) {
      for (const scenario of SCENARIOS) {
        if (!applies(subject, scenario, variant)) continue;
        test(`${scenario.name}, ${variant.name}: ${scenario.about}`, async () => {
          const served = await serve(subject, variant, scenario);
          const { received, meter } = served;
          if (scenario.failure !== undefined && !variant.stream) {
            // Nothing was written: the route renders the error in the caller's dialect (see requests.test.ts for those bodies).
            assert.ok(received.thrown instanceof GatewayError && received.thrown.kind === scenario.failure.kind, String(received.thrown));
            assert.equal(meter.firstByteAt, null);
          } else {
            assert.equal(received.thrown, undefined, String(received.thrown instanceof Error ? received.thrown.stack : received.thrown));
            assert.equal(received.status, 200);
            assert.notEqual(meter.firstByteAt, null, 'the first byte is metered');
            if (variant.stream) {
              assert.equal(received.headers['cache-control'], 'no-cache');
              framesOf(received.body, variant.framing!, scenario.failure !== undefined);
            } else {
              assert.match(received.headers['content-type'] ?? '', /^application\/json/);
              assert.equal(received.body, JSON.stringify(JSON.parse(received.body)), 'a whole answer is compact JSON');
            }
          }
          if (scenario.failure !== undefined) {
            if (variant.stream) assert.equal(meter.failure?.kind, scenario.failure.kind, 'a failure after the first byte is metered as one');
          } else {
            const reported = reportedUsage(scenario);
            if (reported === null) assert.ok(meter.tokensCounted && meter.usage !== null && meter.usage.output > 0, 'Sluice counts what the upstream did not');
            else assert.deepEqual(meter.usage, reported, "the upstream's usage is metered as it reported it");
          }
          matchesSnapshot(join(FIXTURES, 'writers', subject.folder, `${scenario.name}.${variant.name}.txt`), snapshotOf(subject, served, variant));
        });
      }
      if (variant.only !== undefined && !variant.only.includes('relay')) continue;
      for (const relay of RELAY_CASES) {
        // The ways a relayed stream ends are the writer's, not the request's: once per operation, on its main stream.
        if (relay.name !== 'relay' && variant.name !== 'stream') continue;
        test(`${relay.name}, ${variant.name}: ${relay.about}`, async () => {
          const served = await serve(subject, variant, relay);
          const { received, meter, provider } = served;
          assert.equal(provider.relayedCalls.length, 1);
          assert.equal(provider.generated.length, 0, 'nothing translated');
          if (relay.failure !== undefined && relay.events === 0) {
            assert.equal(received.thrown, relay.failure, 'thrown, for routing to try again');
            assert.equal(meter.firstByteAt, null, 'nothing was written');
          } else {
            assert.equal(received.thrown, undefined, String(received.thrown instanceof Error ? received.thrown.stack : received.thrown));
            assert.equal(received.status, 200);
            if (variant.stream) framesOf(received.body, variant.framing!, relay.failure !== undefined);
            else assert.equal(received.body, JSON.stringify(JSON.parse(received.body)), 'a whole answer is compact JSON');
          }
          if (relay.failure !== undefined && relay.events !== 0) assert.equal(meter.failure?.kind, relay.failure.kind);
          if (relay.failure === undefined) assert.ok(meter.usage !== null, 'metered');
          if (relay.name === 'relay') assert.ok(!meter.tokensCounted, "the upstream's own usage is metered");
          matchesSnapshot(join(FIXTURES, 'writers', subject.folder, `${relay.name}.${variant.name}.txt`), snapshotOf(subject, served, variant));
        });
      }
    }
  });
}
