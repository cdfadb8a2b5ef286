import { NO_USAGE } from '../generation/model.js';
import type { Operation, ParsedRequest } from '../generation/operation.js';
import type { WireOperation } from '../generation/provider.js';
import { rendered, wholeReply } from './reply.js';

type Json = Readonly<Record<string, unknown>>;

/** A token count in one caller dialect: its keys and parsing, how an upstream of the same wire is asked, and Sluice's own answer. */
export interface CountTokensSpec<Request extends ParsedRequest> extends Pick<Operation<Request>, 'endpoint' | 'operation' | 'dialect' | 'credential' | 'parse' | 'modelNamed'> {
  readonly relayOperation: WireOperation;
  /** The body (and the caller headers its API reads) for an upstream that counts in the caller's wire. */
  relayed(request: Request): { readonly body: Json; readonly headers?: Readonly<Record<string, string>> };
  /** Sluice's own count, in the caller's wire, for any other upstream. */
  counted(request: Request): Promise<Json>;
  readonly headers: Readonly<Record<string, string>>;
}

const NOTHING_GENERATED = { maxTokens: 0, choices: 0 } as const;

/**
 * A count generates nothing: it is admitted against the request limits (a spent budget refuses it
 * too) but reserves nothing, and its ledger row costs nothing.
 */
export function countTokensOperation<Request extends ParsedRequest>(spec: CountTokensSpec<Request>): Operation<Request> {
  const { relayOperation, relayed, counted, headers, ...caller } = spec;
  return {
    ...caller,
    generates: false,
    // Nothing reserved: no output, and a prompt counted as nothing.
    outputBound: () => NOTHING_GENERATED,
    countUsage: () => Promise.resolve(NO_USAGE),
    plan(request, { model, provider }) {
      if (!provider.relays(relayOperation, model)) return { kind: 'none' };
      return { kind: 'relay', operation: relayOperation, stream: false, ...relayed(request) };
    },
    answer(request, answer) {
      if (answer.kind === 'relayed') return wholeReply(NO_USAGE, () => [], () => rendered(JSON.stringify(answer.body), headers));
      return wholeReply(NO_USAGE, () => [], async () => rendered(JSON.stringify(await counted(request)), headers));
    },
  };
}
