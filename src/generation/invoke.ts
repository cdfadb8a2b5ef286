import { generateAll, streamAll, type CallTarget, type SubCall } from './fan-out.js';
import type { GenerationResult, StreamPart } from './model.js';
import type { Provider, RelayCall, RelayResponse } from './provider.js';

/**
 * The invoke stage: every call a dialect makes to a provider goes through here. Routing
 * (routing/router.ts) gives each attempt one that fans a request out over the upstream's own `n`
 * and holds a stream until its first content; a token count calls the provider directly.
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
