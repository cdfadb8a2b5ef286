import { GatewayError } from '../../core/errors.js';
import type { BilledUnits } from '../../generation/model.js';
import { NO_OUTPUT, type Operation } from '../../generation/operation.js';
import type { WireOperation } from '../../generation/provider.js';
import { countUsage } from '../../generation/token-counter.js';
import { bearerToken } from '../../wire/key-carriers.js';
import type { Consumption } from '../../wire/relay-format.js';
import { rendered, wholeReply } from '../reply.js';
import { invalid, validationError, withoutProtoKey } from './validation.js';
import type { z } from 'zod';

type Json = Readonly<Record<string, unknown>>;

/** What a call sold per call (a rerank, a moderation) is billed. */
export const ONE_CALL: BilledUnits = { requests: 1 };

/** A request of a relayed JSON operation: the validated body, passed on as the caller sent it. */
export interface RelayedJsonRequest {
  readonly model: string;
  readonly stream: false;
  readonly body: Json;
}

/** One of the JSON operations only an upstream of the same wire can answer (rerank, moderations, images). */
export interface RelayedJsonSpec<Request extends RelayedJsonRequest, Body extends Json> {
  readonly endpoint: Operation<Request>['endpoint'];
  /** The ledger's name, and how the operation is named in a refusal. */
  readonly operation: string;
  /** The caller's path, for refusals. */
  readonly path: string;
  readonly relayOperation: WireOperation;
  readonly schema: z.ZodType<Body>;
  /** Checks beyond the schema, and the request; throws a GatewayError naming the parameter. */
  request(body: Body): Request;
  /**
   * What a field of several shapes takes, in words, for a value none of them matched (zod's report
   * is generic); by its parameter, array indexes written `[]` (`documents[]`).
   */
  readonly unionExpectations?: Readonly<Record<string, string>>;
  /** The texts Sluice counts when the upstream reports no tokens. */
  inputs(request: Request): readonly string[];
  /** The units the request will be billed (images: `n`; a rerank: one call), reserved against budgets; no output tokens are. */
  units(request: Request): BilledUnits;
  consumption(body: Json): Consumption;
}

/**
 * A JSON operation relayed to an OpenAI-compatible upstream that serves it, `model` rewritten both
 * ways: its answer is the upstream's, with `model` (where it has one) the public id. There is
 * nothing to translate it into for Anthropic or Gemini upstreams, so their deployments refuse it,
 * naming the model and the operation. Its input is all Sluice counts when the upstream does not.
 */
export function relayedJsonOperation<Request extends RelayedJsonRequest, Body extends Json>(spec: RelayedJsonSpec<Request, Body>): Operation<Request> {
  const schema = withoutProtoKey(spec.schema);
  return {
    endpoint: spec.endpoint,
    operation: spec.operation,
    dialect: 'openai',
    credential: (wire) => bearerToken(wire.headers),
    parse(body) {
      if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new GatewayError('invalid_request', 'The request body must be a JSON object.');
      const parsed = schema.safeParse(body, { reportInput: true });
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        const param = issue.path.map((part) => (typeof part === 'number' ? `[${part}]` : String(part))).join('.').replace(/\.\[/g, '[');
        const expected = spec.unionExpectations?.[param.replace(/\[\d+\]/g, '[]')];
        if (issue.code === 'invalid_union' && issue.input !== undefined && expected !== undefined) {
          throw invalid(param, `Invalid type for '${param}': expected ${expected}.`, 'invalid_type');
        }
        throw validationError(issue);
      }
      return spec.request(parsed.data as Body);
    },
    outputBound: (request) => ({ ...NO_OUTPUT, units: spec.units(request) }),
    countUsage: (request) => countUsage(spec.inputs(request), []),
    plan(request, { model, provider }) {
      if (!provider.relays(spec.relayOperation, model)) {
        throw new GatewayError('unsupported_endpoint', `The model \`${model.id}\` cannot serve ${spec.path}: its upstream (provider '${provider.id}', ${provider.kind}) does not serve ${spec.operation}.`, { param: 'model' });
      }
      return { kind: 'relay', operation: spec.relayOperation, body: request.body, stream: false };
    },
    answer(request, answer) {
      if (answer.kind !== 'relayed') throw new Error(`${spec.operation} is always relayed whole`);
      const body = answer.body;
      const { usage, units } = spec.consumption(body);
      return wholeReply(usage, () => [], () => rendered(JSON.stringify('model' in body ? { ...body, model: request.model } : body)), units);
    },
  };
}
