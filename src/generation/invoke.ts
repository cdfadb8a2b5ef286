import { generateAll, streamAll, type CallTarget, type SubCall } from './fan-out.js';
import type { GenerationResult, StreamPart } from './model.js';
import type { Provider, RelayCall, RelayResponse } from './provider.js';

/**
 * The invoke stage: every call a dialect makes to a provider goes through here. Today it only fans
 * a request out over the upstream's own `n`; routing (retries, fallback, deadlines) wraps these.
 */
export interface Invoker {
  generate(subCalls: readonly SubCall[], target: CallTarget): Promise<GenerationResult>;
  stream(subCalls: readonly SubCall[], target: CallTarget): Promise<AsyncIterable<StreamPart>>;
  relay(call: RelayCall): Promise<RelayResponse>;
}

const invokers = new WeakMap<Provider, Invoker>();

/** The provider called directly; one invoker per adapter, made once rather than per request. */
export function directInvoker(provider: Provider): Invoker {
  let invoker = invokers.get(provider);
  if (invoker === undefined) {
    invoker = {
      generate: (subCalls, target) => generateAll(provider, subCalls, target),
      stream: (subCalls, target) => streamAll(provider, subCalls, target),
      relay: (call) => provider.relay(call),
    };
    invokers.set(provider, invoker);
  }
  return invoker;
}
