import { checkTranslatable, type ChatCapabilities, type ChatTurn } from '../completions/chat-translation.js';
import type { Completion, CompletionCall, CompletionEvent } from '../completions/completion.js';
import { completeByTurns, streamByTurns, type ChatTurnRunner, type TurnResult } from '../completions/fan-out.js';
import type { Provider } from './provider.js';
import type { UpstreamClient } from './upstream-client.js';

/**
 * A provider reached only through a chat API: what it cannot honour is refused up front, then
 * the request fans out into turns. Subclasses say what their upstream can do and map one turn.
 */
export abstract class ChatTranslatingProvider implements Provider, ChatTurnRunner {
  abstract readonly kind: string;
  readonly maxChoicesPerCall: number;

  protected constructor(
    readonly id: string,
    protected readonly client: UpstreamClient,
    private readonly capabilities: ChatCapabilities,
  ) {
    this.maxChoicesPerCall = capabilities.maxChoicesPerCall;
  }

  async complete(call: CompletionCall): Promise<Completion> {
    checkTranslatable(call.request, call.model, this.capabilities);
    return completeByTurns(this, call);
  }

  async streamCompletion(call: CompletionCall): Promise<AsyncIterable<CompletionEvent>> {
    checkTranslatable(call.request, call.model, this.capabilities);
    return streamByTurns(this, call);
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  abstract completeTurn(turn: ChatTurn, call: CompletionCall): Promise<TurnResult>;
  abstract streamTurn(turn: ChatTurn, call: CompletionCall): Promise<AsyncIterable<CompletionEvent>>;
}
