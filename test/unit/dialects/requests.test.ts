import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Dialect } from '../../../src/dialects/dialect.js';
import { GatewayError } from '../../../src/core/errors.js';
import { asJson, loadJsonFixtures, REQUEST_DIRS, UPDATING, writeJsonFixture, type RenderedError, type RequestExpectation, type RequestFixture } from './support/fixtures.js';
import { SUBJECTS, translatingModel, type Subject } from './support/subjects.js';

/**
 * Every caller operation through the same checks, from fixture files of requests as real clients
 * and the vendors' references send them (test/unit/fixtures/dialects/requests/<operation>/): what it
 * parses to, that the body a same-dialect upstream is relayed is the caller's own, what the request
 * becomes for an upstream of another dialect, and, for bad input, the caller's own error body.
 */

const REQUEST_ID = 'req_fixture';

function rendered(dialect: Dialect, thrown: unknown): RenderedError {
  // Anything else thrown would reach the caller as a 500: a bug of the parser, not a refusal.
  assert.ok(thrown instanceof GatewayError, `threw ${String(thrown)}${thrown instanceof Error ? `\n${thrown.stack}` : ''}`);
  const { status, body } = dialect.renderError(thrown, REQUEST_ID);
  return { status, body: JSON.parse(body) };
}

function outcome(subject: Subject, fixture: RequestFixture): RequestExpectation {
  const { request } = fixture;
  const body = structuredClone(request.body);
  const wire = { headers: request.headers, path: request.path, query: new URLSearchParams(request.query) };
  let parsed: unknown;
  try {
    parsed = subject.parse(body, wire);
  } catch (thrown) {
    return { error: rendered(subject.dialect, thrown) };
  }
  assert.deepEqual(body, request.body, 'parsing leaves the caller’s body as it came');
  assert.deepEqual(subject.relayed(parsed), request.body, 'a same-dialect upstream is relayed the body the caller sent');
  const typed = subject.typedBody?.(parsed);
  const expectation: { -readonly [K in keyof RequestExpectation]: RequestExpectation[K] } = { parsed: asJson(subject.view(parsed)) };
  if (typed !== undefined && !isDeepEqual(typed, request.body)) expectation.bodyAsParsed = asJson(typed);
  if (subject.translate !== undefined) {
    const kind = fixture.upstream?.kind ?? subject.translatesFor;
    const model = translatingModel((parsed as { model: string }).model, kind, fixture.upstream?.hostedTools);
    try {
      expectation.translated = asJson(subject.translate(parsed, model, kind));
    } catch (thrown) {
      expectation.translationError = rendered(subject.dialect, thrown);
    }
  }
  if (subject.counted !== undefined) expectation.counted = asJson(subject.counted(parsed));
  return expectation;
}

/**
 * `expected` as a pattern: an object's own keys only (nested the same way), `{"$match": regex}` for
 * a string that must match, anything else equal.
 */
function matchesPartly(actual: unknown, expected: unknown, at: string): void {
  if (expected !== null && typeof expected === 'object' && !Array.isArray(expected)) {
    if ('$match' in expected) {
      assert.match(String(actual), new RegExp(String(expected.$match)), at);
      return;
    }
    assert.ok(actual !== null && typeof actual === 'object', `${at}: expected an object, got ${JSON.stringify(actual)}`);
    for (const [key, value] of Object.entries(expected)) matchesPartly((actual as Record<string, unknown>)[key], value, `${at}.${key}`);
    return;
  }
  assert.deepEqual(actual, expected, at);
}

function isDeepEqual(a: unknown, b: unknown): boolean {
  try {
    assert.deepEqual(a, b);
    return true;
  } catch {
    return false;
  }
}

for (const subject of SUBJECTS) {
  describe(`${subject.operation} requests`, () => {
    const fixtures = loadJsonFixtures<RequestFixture>(`requests/${REQUEST_DIRS[subject.operation]}`);

    test('has requests recorded from real clients, and bad ones', () => {
      assert.ok(fixtures.some((f) => f.fixture.source.startsWith('recorded')), 'a request recorded from a real client');
      assert.ok(fixtures.some((f) => f.name.startsWith('bad-')), 'a request to refuse');
    });

    for (const { name, file, fixture } of fixtures) {
      test(`${name}: ${fixture.about}`, { todo: fixture.knownBug }, () => {
        const actual = outcome(subject, fixture);
        // Checked when updating too, so that a refresh cannot turn a refusal into an answer unseen.
        assert.equal(actual.error !== undefined, name.startsWith('bad-'), name.startsWith('bad-') ? 'a bad request is refused' : `a good request parses: ${JSON.stringify(actual.error)}`);
        if (fixture.knownBug !== undefined) {
          // Written by hand: only what it states is compared.
          assert.ok(fixture.expect !== undefined);
          matchesPartly(actual, fixture.expect, 'expect');
        } else if (UPDATING) writeJsonFixture(file, { ...fixture, expect: actual });
        else assert.deepEqual(actual, fixture.expect);
      });
    }
  });
}
