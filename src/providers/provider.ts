import type { Completion, CompletionCall, CompletionEvent } from '../completions/completion.js';

/**
 * The contract every upstream adapter implements. The core never asks which kind of provider it
 * is talking to: an adapter owns its mapping, its connection pool and its error translation, and
 * throws GatewayErrors only.
 */
export interface Provider {
  readonly id: string;
  readonly kind: string;
  /** One legacy completion, answered whole. */
  complete(call: CompletionCall): Promise<Completion>;
  /**
   * Resolves once the upstream has accepted the request, so that a refusal still becomes an HTTP
   * error status; the events then arrive as the upstream produces them.
   */
  streamCompletion(call: CompletionCall): Promise<AsyncIterable<CompletionEvent>>;
  close(): Promise<void>;
}
