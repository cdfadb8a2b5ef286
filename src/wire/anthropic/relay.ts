import type { RelayFormat } from '../relay-format.js';

/** `message_start` and a block's start commit nothing; a delta, the message's delta or its stop is content. */
export const ANTHROPIC_MESSAGES: RelayFormat = {
  isContent: (event) => event.type === 'content_block_delta' || event.type === 'message_delta' || event.type === 'message_stop',
  wholeProblem: (body) => (Array.isArray(body.content) ? undefined : 'a message without content'),
};

export const ANTHROPIC_COUNT_TOKENS: RelayFormat = {
  isContent: () => true,
  wholeProblem: (body) => (typeof body.input_tokens === 'number' ? undefined : 'a token count without input_tokens'),
};
